#ifndef BATCHFETCH_CYAML_SHIM_H
#define BATCHFETCH_CYAML_SHIM_H
#include <yaml.h>
#endif
