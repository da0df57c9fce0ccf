#ifndef PROFILEDROP_CSODIUM_SHIM_H
#define PROFILEDROP_CSODIUM_SHIM_H
#include <sodium.h>
#endif
