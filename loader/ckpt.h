/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckpt.h: internals of libcoordl's checkpoints (coordl_ckpt.h).
 *
 * ckpt_file.c holds what reads and names files: CRC32C, encoding and
 * parsing a header, file names, the directory listing and recovery (the
 * fuzz target builds it alone). ckpt.c holds the writer: buffers, the copy
 * and persist threads. The phase hook lets the tests kill a writer at each
 * step of a write.
 */
#ifndef COORDL_CKPT_INTERNAL_H
#define COORDL_CKPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "coordl.h"
#include "coordl_ckpt.h"

#define COORDL__CKPT_FIXED 64         /* bytes of the header before the section table */
#define COORDL__CKPT_ENTRY 64         /* bytes per section table entry */
#define COORDL__CKPT_HDR_ALIGN 4096   /* header_bytes is a multiple of this */
#define COORDL__CKPT_HDR_MAX 65536    /* and at most this */

/* CRC32C (Castagnoli, reflected 0x82F63B78), continuing from crc (0 to
 * start). Uses the SSE4.2 instruction where the CPU has it. */
uint32_t coordl__crc32c(uint32_t crc, const void *buf, size_t n);
/* The same, table-driven only (the tests compare both). */
uint32_t coordl__crc32c_sw(uint32_t crc, const void *buf, size_t n);

typedef struct coordl__ckpt_section {
	char name[COORDL_CKPT_NAME_MAX + 1];
	uint64_t offset, length;
} coordl__ckpt_section_t;

typedef struct coordl__ckpt_header {
	uint32_t version;
	uint32_t header_bytes;
	uint64_t sequence, iteration, payload_bytes, created_ns;
	uint32_t nsections;
	uint32_t flags;
	uint32_t payload_crc, header_crc;
	coordl__ckpt_section_t *sec; /* nsections entries */
} coordl__ckpt_header_t;

/* header_bytes for n sections. */
uint32_t coordl__ckpt_header_size(uint32_t nsections);

/* Is s a valid section name? 1 or 0. */
int coordl__ckpt_name_valid(const char *s);

/* Encode h (with payload_crc set; header_bytes from nsections) into out,
 * which has room for coordl__ckpt_header_size(h->nsections) bytes, and
 * set h->header_crc. */
void coordl__ckpt_encode(coordl__ckpt_header_t *h, unsigned char *out);

/*
 * Parse the fixed part (the first COORDL__CKPT_FIXED bytes of a file):
 * magic, version, header_bytes and payload_bytes within limits. Fills h
 * (sec NULL). 0, or -1 with EINVAL and why.
 */
int coordl__ckpt_parse_fixed(const unsigned char *buf, size_t n, coordl__ckpt_header_t *h,
			     char *why, size_t whylen);

/*
 * Parse and verify a whole header (buf holds header_bytes bytes as the
 * fixed part said): header CRC, the section table (names, alignment,
 * bounds, order, overlap, uniqueness), zero padding. On success h->sec is
 * malloc'ed (free it). 0, or -1 with EINVAL (why) or ENOMEM.
 */
int coordl__ckpt_parse_header(const unsigned char *buf, size_t n, coordl__ckpt_header_t *h,
			      char *why, size_t whylen);

#define COORDL__CKPT_SEQ_DIGITS 20
#define COORDL__CKPT_FINAL_SUFFIX ".ckpt"
#define COORDL__CKPT_TEMP_SUFFIX ".tmp"
/* Room for a file name: ".<prefix>-<20 digits>.ckpt" and its NUL. */
#define COORDL__CKPT_FILE_NAME_MAX (COORDL_CKPT_PREFIX_MAX + COORDL__CKPT_SEQ_DIGITS + 16)

/* Is s a valid file name prefix (coordl_ckpt_config_t.name)? 1 or 0. */
int coordl__ckpt_prefix_valid(const char *s);

/* "<name>-<seq>.ckpt" and ".<name>-<seq>.tmp" into out (len bytes). */
void coordl__ckpt_final_name(char *out, size_t len, const char *name, uint64_t seq);
void coordl__ckpt_temp_name(char *out, size_t len, const char *name, uint64_t seq);

/* The sequence numbers of the final files of `name` in the directory,
 * ascending (malloc'ed, *n of them); its temporaries are removed when
 * remove_temps is set. 0, or -1 with errno. */
int coordl__ckpt_list(int dirfd, const char *name, int remove_temps, uint64_t **out, size_t *n);

/* n bytes of anonymous memory, in huge pages where the kernel gives them
 * (free with munmap); NULL with ENOMEM. */
void *coordl__ckpt_big_alloc(uint64_t n);

/* Phases of one write, in order; the hook is called after each. */
enum coordl__ckpt_phase {
	COORDL__CKPT_PH_OPENED = 0,   /* temporary file created, empty */
	COORDL__CKPT_PH_PAYLOAD_PART, /* part of the payload written */
	COORDL__CKPT_PH_PAYLOAD,      /* the whole payload written, no header */
	COORDL__CKPT_PH_HEADER,       /* header written, not synced */
	COORDL__CKPT_PH_SYNCED,       /* file synced, not renamed */
	COORDL__CKPT_PH_RENAMED,      /* renamed, directory not synced */
	COORDL__CKPT_PH_DIRSYNCED,    /* directory synced, older files not removed */
	COORDL__CKPT_PH_RETAINED,     /* older files beyond `keep` removed */
	COORDL__CKPT_PH_COUNT
};

/* Tests only: call fn(phase, arg) on the persist thread after each phase
 * of every write (NULL: none). Set it before the first commit. */
void coordl__ckpt_set_hook(coordl_ckpt_t *ck, void (*fn)(int phase, void *arg), void *arg);

/* Tests only: write in chunks of this many bytes (default 8 MiB), so that
 * a small payload has several PAYLOAD_PART phases. */
void coordl__ckpt_set_chunk(coordl_ckpt_t *ck, size_t chunk);

#endif
