#ifndef BATCHFETCH_CARCHIVE_SHIM_H
#define BATCHFETCH_CARCHIVE_SHIM_H
/* libarchive (Debian: libarchive-dev) reads every archive format batchfetch unpacks: tar in its
   ustar, pax and GNU forms, zip (zip64, deflate64), and the gzip, bzip2, xz and zstd filters.
   Docs/Archives.md says why it is libarchive and not parsers of our own. */
#include <archive.h>
#include <archive_entry.h>
#endif
