# SPDX-License-Identifier: GPL-2.0-or-later
# tools: dataset generator and converters (included from the top Makefile.am)

# coordl-datagen (prep helper): deterministic ImageNet-like test data.
bin_PROGRAMS += tools/coordl-datagen
tools_coordl_datagen_SOURCES = tools/coordl-datagen.c
tools_coordl_datagen_CPPFLAGS = $(AM_CPPFLAGS) $(LIBJPEG_CFLAGS)
tools_coordl_datagen_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tools_coordl_datagen_LDADD = common/libsyncommon.la $(LIBJPEG_LIBS) $(PTHREAD_LIBS) $(LIBM)
dist_man_MANS += doc/coordl-datagen.1
UNIT_TESTS += tools/test/coordl-datagen.sh
EXTRA_DIST += tools/test/coordl-datagen.sh

# coordl-pack (loader helper): ImageFolder / file list -> coordl shards.
bin_PROGRAMS += tools/coordl-pack
tools_coordl_pack_SOURCES = tools/coordl-pack.c
tools_coordl_pack_LDADD = loader/libcoordl-core.la
dist_man_MANS += doc/coordl-pack.1
noinst_HEADERS += tools/die.h
