/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * version.c - sn_version() and sn_version_string(): the version of the library in use.
 *
 * Both answer from the macros of the header this file was compiled with; make check proves that
 * those macros equal configure's version, so the library, its header and the package agree.
 */
#include "config.h"

#include "socknotify.h"

#define SN__STR(x) #x
#define SN__XSTR(x) SN__STR(x)

_Static_assert(SN_VERSION_MAJOR < 256 && SN_VERSION_MINOR < 256 && SN_VERSION_PATCH < 256,
               "each part of the version must fit in 8 bits of SN_VERSION_HEX");

SN_EXPORT unsigned sn_version(void)
{
        return SN_VERSION_HEX;
}

SN_EXPORT const char *sn_version_string(void)
{
        return SN__XSTR(SN_VERSION_MAJOR) "." SN__XSTR(SN_VERSION_MINOR) "." SN__XSTR(
                SN_VERSION_PATCH);
}
