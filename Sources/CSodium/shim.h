#ifndef BATCHFETCH_CSODIUM_SHIM_H
#define BATCHFETCH_CSODIUM_SHIM_H
/* libsodium (Debian: libsodium-dev) gives BLAKE2b-512 (crypto_generichash), which minisign's
   prehashed signatures sign and swift-crypto does not have. Docs/Signatures.md says why. */
#include <sodium.h>
#endif
