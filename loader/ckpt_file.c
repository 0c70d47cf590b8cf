/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckpt_file.c: the checkpoint file format (coordl_ckpt.h, ckpt.h).
 *
 * Everything read from a file is untrusted: a file may be torn by a crash
 * of the machine, truncated, corrupted on disk, or written by another
 * program. So every field is checked against the limits before it is used
 * to size or index anything, and a header is accepted only when its CRC
 * matches; the engine then checks the payload's CRC and the file length.
 *
 * Recovery lives here too: listing a directory's checkpoints and loading
 * the newest that verifies.
 *
 * CRC32C (the Castagnoli polynomial, as iSCSI, ext4 and Btrfs use it) is
 * computed with the SSE4.2 crc32 instruction where the CPU has it (about
 * 8 bytes per 3 cycles, faster than any disk the file goes to), else with
 * the slicing-by-8 table method: eight 256-entry tables, where table k
 * gives the CRC contribution of a byte followed by k zero bytes, so that
 * eight input bytes are folded in with eight lookups.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define COORDL__CRC_HW 1
#endif

#include "loader/ckpt.h"
#include "loader/util.h"

/* The reflected form of the Castagnoli polynomial 0x1EDC6F41. */
#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_have_hw;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int b = 0; b < 8; b++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[0][i] = c;
	}
	for (int k = 1; k < 8; k++)
		for (int i = 0; i < 256; i++)
			crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^
					  crc_table[0][crc_table[k - 1][i] & 0xff];
#ifdef COORDL__CRC_HW
	__builtin_cpu_init();
	crc_have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

/* c is the running (inverted) register. */
static uint32_t crc_sw_raw(uint32_t c, const unsigned char *p, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= c;
		c = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
		    crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
		    crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
		    crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
		p += 8;
		n -= 8;
	}
#endif
	while (n--)
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
	return c;
}

#ifdef COORDL__CRC_HW
__attribute__((target("sse4.2"))) static uint32_t crc_hw_raw(uint32_t c32, const unsigned char *p,
							      size_t n)
{
	uint64_t c = c32;

	while (n && ((uintptr_t)p & 7)) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		n--;
	}
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
		p += 8;
		n -= 8;
	}
	while (n--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

uint32_t coordl__crc32c_sw(uint32_t crc, const void *buf, size_t n)
{
	pthread_once(&crc_once, crc_init);
	return ~crc_sw_raw(~crc, buf, n);
}

uint32_t coordl__crc32c(uint32_t crc, const void *buf, size_t n)
{
	pthread_once(&crc_once, crc_init);
#ifdef COORDL__CRC_HW
	if (crc_have_hw)
		return ~crc_hw_raw(~crc, buf, n);
#endif
	return ~crc_sw_raw(~crc, buf, n);
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

uint32_t coordl__ckpt_header_size(uint32_t nsections)
{
	uint64_t n = COORDL__CKPT_FIXED + (uint64_t)nsections * COORDL__CKPT_ENTRY;
	return (uint32_t)((n + COORDL__CKPT_HDR_ALIGN - 1) / COORDL__CKPT_HDR_ALIGN *
			  COORDL__CKPT_HDR_ALIGN);
}

int coordl__ckpt_name_valid(const char *s)
{
	size_t n = 0;

	if (!s)
		return 0;
	for (; s[n]; n++)
		if (s[n] < 0x21 || s[n] > 0x7e || n >= COORDL_CKPT_NAME_MAX)
			return 0;
	return n > 0;
}

/* CRC of the header with its own CRC field read as zero. */
static uint32_t header_crc(const unsigned char *buf, uint32_t header_bytes)
{
	static const unsigned char zero[4];
	uint32_t c = coordl__crc32c(0, buf, 60);

	c = coordl__crc32c(c, zero, 4);
	return coordl__crc32c(c, buf + 64, header_bytes - 64);
}

void coordl__ckpt_encode(coordl__ckpt_header_t *h, unsigned char *out)
{
	h->header_bytes = coordl__ckpt_header_size(h->nsections);
	memset(out, 0, h->header_bytes);
	memcpy(out, COORDL_CKPT_MAGIC, 8);
	put32(out + 8, h->version);
	put32(out + 12, h->header_bytes);
	put64(out + 16, h->sequence);
	put64(out + 24, h->iteration);
	put64(out + 32, h->payload_bytes);
	put64(out + 40, h->created_ns);
	put32(out + 48, h->nsections);
	put32(out + 52, h->flags);
	put32(out + 56, h->payload_crc);
	for (uint32_t i = 0; i < h->nsections; i++) {
		unsigned char *e = out + COORDL__CKPT_FIXED + (size_t)i * COORDL__CKPT_ENTRY;
		memcpy(e, h->sec[i].name, strlen(h->sec[i].name));
		put64(e + 48, h->sec[i].offset);
		put64(e + 56, h->sec[i].length);
	}
	h->header_crc = header_crc(out, h->header_bytes);
	put32(out + 60, h->header_crc);
}

static int bad(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	errno = EINVAL;
	return -1;
}

int coordl__ckpt_parse_fixed(const unsigned char *buf, size_t n, coordl__ckpt_header_t *h,
			     char *why, size_t whylen)
{
	memset(h, 0, sizeof(*h));
	if (n < COORDL__CKPT_FIXED)
		return bad(why, whylen, "%zu bytes: shorter than a checkpoint header (%d)", n,
			   COORDL__CKPT_FIXED);
	if (memcmp(buf, COORDL_CKPT_MAGIC, 8) != 0)
		return bad(why, whylen, "not a checkpoint (bad magic)");
	h->version = get32(buf + 8);
	h->header_bytes = get32(buf + 12);
	h->sequence = get64(buf + 16);
	h->iteration = get64(buf + 24);
	h->payload_bytes = get64(buf + 32);
	h->created_ns = get64(buf + 40);
	h->nsections = get32(buf + 48);
	h->flags = get32(buf + 52);
	h->payload_crc = get32(buf + 56);
	h->header_crc = get32(buf + 60);
	if (h->version != COORDL_CKPT_FORMAT_VERSION)
		return bad(why, whylen, "format version %u; this library reads %d", h->version,
			   COORDL_CKPT_FORMAT_VERSION);
	if (h->nsections < 1 || h->nsections > COORDL_CKPT_MAX_SECTIONS)
		return bad(why, whylen, "%u sections; expected 1..%d", h->nsections,
			   COORDL_CKPT_MAX_SECTIONS);
	if (h->header_bytes != coordl__ckpt_header_size(h->nsections))
		return bad(why, whylen, "header of %u bytes; %u sections take %u", h->header_bytes,
			   h->nsections, coordl__ckpt_header_size(h->nsections));
	if (h->flags != 0)
		return bad(why, whylen, "unknown flags 0x%x", h->flags);
	/* Far beyond any host memory; keeps offset arithmetic in range. */
	if (h->payload_bytes > (UINT64_C(1) << 56))
		return bad(why, whylen, "payload of %llu bytes is out of range",
			   (unsigned long long)h->payload_bytes);
	return 0;
}

int coordl__ckpt_parse_header(const unsigned char *buf, size_t n, coordl__ckpt_header_t *h,
			      char *why, size_t whylen)
{
	uint64_t end = 0;
	size_t table_end;
	uint32_t crc;

	if (coordl__ckpt_parse_fixed(buf, n, h, why, whylen) < 0)
		return -1;
	if (n < h->header_bytes)
		return bad(why, whylen, "header cut short: %zu of %u bytes", n, h->header_bytes);
	crc = header_crc(buf, h->header_bytes);
	if (crc != h->header_crc)
		return bad(why, whylen, "header checksum 0x%08x does not match 0x%08x", crc,
			   h->header_crc);
	if (!(h->sec = calloc(h->nsections, sizeof(*h->sec)))) {
		errno = ENOMEM;
		if (why && whylen)
			snprintf(why, whylen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < h->nsections; i++) {
		const unsigned char *e = buf + COORDL__CKPT_FIXED + (size_t)i * COORDL__CKPT_ENTRY;
		coordl__ckpt_section_t *s = &h->sec[i];
		size_t len = strnlen((const char *)e, 48);

		if (len == 48)
			goto bad_name;
		memcpy(s->name, e, len);
		s->name[len] = 0;
		for (size_t k = len; k < 48; k++)
			if (e[k])
				goto bad_name;
		if (!coordl__ckpt_name_valid(s->name))
			goto bad_name;
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(h->sec[j].name, s->name) == 0) {
				bad(why, whylen, "section '%s' appears twice", s->name);
				goto fail;
			}
		s->offset = get64(e + 48);
		s->length = get64(e + 56);
		if (s->offset % COORDL_CKPT_ALIGN || s->offset < end || s->offset > h->payload_bytes ||
		    s->length > h->payload_bytes - s->offset) {
			bad(why, whylen,
			    "section '%s' at %llu+%llu: not aligned, out of order or beyond the "
			    "payload (%llu bytes)",
			    s->name, (unsigned long long)s->offset, (unsigned long long)s->length,
			    (unsigned long long)h->payload_bytes);
			goto fail;
		}
		end = s->offset + s->length;
		continue;
	bad_name:
		bad(why, whylen, "section %u: bad name", i);
		goto fail;
	}
	table_end = COORDL__CKPT_FIXED + (size_t)h->nsections * COORDL__CKPT_ENTRY;
	for (size_t k = table_end; k < h->header_bytes; k++)
		if (buf[k]) {
			bad(why, whylen, "non-zero padding after the section table");
			goto fail;
		}
	return 0;
fail:
	free(h->sec);
	h->sec = NULL;
	errno = EINVAL;
	return -1;
}

/* ---- file names ------------------------------------------------------------ */

int coordl__ckpt_prefix_valid(const char *s)
{
	size_t n = 0;

	if (!s || s[0] == '.')
		return 0;
	for (; s[n]; n++) {
		char c = s[n];
		if (n >= COORDL_CKPT_PREFIX_MAX ||
		    !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return 0;
	}
	return n > 0;
}

/*
 * Does entry `d` name a file of prefix `name`: "<lead><name>-<20 digits>
 * <suffix>" exactly? 1 and *seq, else 0.
 */
static int parse_name(const char *d, const char *lead, const char *name, const char *suffix,
		      uint64_t *seq)
{
	size_t ll = strlen(lead), nl = strlen(name);
	uint64_t v = 0;
	const char *p;

	if (strncmp(d, lead, ll) != 0 || strncmp(d + ll, name, nl) != 0 || d[ll + nl] != '-')
		return 0;
	p = d + ll + nl + 1;
	for (int i = 0; i < COORDL__CKPT_SEQ_DIGITS; i++, p++) {
		if (*p < '0' || *p > '9')
			return 0;
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (strcmp(p, suffix) != 0)
		return 0;
	*seq = v;
	return 1;
}

void coordl__ckpt_final_name(char *out, size_t len, const char *name, uint64_t seq)
{
	snprintf(out, len, "%s-%0*llu" COORDL__CKPT_FINAL_SUFFIX, name, COORDL__CKPT_SEQ_DIGITS, (unsigned long long)seq);
}

void coordl__ckpt_temp_name(char *out, size_t len, const char *name, uint64_t seq)
{
	snprintf(out, len, ".%s-%0*llu" COORDL__CKPT_TEMP_SUFFIX, name, COORDL__CKPT_SEQ_DIGITS, (unsigned long long)seq);
}

/* The sequence numbers of the final files of `name` in the directory, in
 * ascending order (malloc'ed, *n of them); temporaries are removed when
 * remove_temps is set. 0, or -1 with errno. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int coordl__ckpt_list(int dirfd, const char *name, int remove_temps, uint64_t **out, size_t *n)
{
	uint64_t *v = NULL, seq;
	size_t cap = 0, k = 0;
	struct dirent *de;
	DIR *d;
	int fd, e;

	*out = NULL;
	*n = 0;
	if ((fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	if (!(d = fdopendir(fd))) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	errno = 0;
	while ((de = readdir(d))) {
		if (parse_name(de->d_name, "", name, COORDL__CKPT_FINAL_SUFFIX, &seq)) {
			if (k == cap) {
				uint64_t *nv = realloc(v, (cap ? cap * 2 : 16) * sizeof(*v));
				if (!nv) {
					free(v);
					closedir(d);
					errno = ENOMEM;
					return -1;
				}
				v = nv;
				cap = cap ? cap * 2 : 16;
			}
			v[k++] = seq;
		} else if (remove_temps && parse_name(de->d_name, ".", name, COORDL__CKPT_TEMP_SUFFIX, &seq)) {
			unlinkat(dirfd, de->d_name, 0);
		}
		errno = 0;
	}
	e = errno;
	closedir(d);
	if (e) {
		free(v);
		errno = e;
		return -1;
	}
	if (k)
		qsort(v, k, sizeof(*v), cmp_u64);
	*out = v;
	*n = k;
	return 0;
}

/* Anonymous memory in huge pages where the kernel gives them: a page fault
 * costs about as much per 4 KiB page as per 2 MiB one on the VMs this was
 * measured on (see PERF-NOTES), so big buffers fault in 512x faster. */
void *coordl__ckpt_big_alloc(uint64_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
#ifdef MADV_HUGEPAGE
	madvise(p, n, MADV_HUGEPAGE);
#endif
	return p;
}


/* ---- recovery ---------------------------------------------------------- */

struct coordl_ckpt_image {
	coordl__ckpt_header_t h;
	uint64_t file_bytes;
	unsigned char *payload;
	uint64_t map_bytes;
};

void coordl_ckpt_image_free(coordl_ckpt_image_t *img)
{
	int e = errno;

	if (!img)
		return;
	if (img->payload)
		munmap(img->payload, img->map_bytes);
	free(img->h.sec);
	free(img);
	errno = e;
}

static int pread_all(int fd, unsigned char *p, uint64_t n, off_t off)
{
	while (n) {
		ssize_t r = pread(fd, p, n > (1u << 30) ? (1u << 30) : (size_t)n, off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			errno = EINVAL; /* shorter than fstat said: changed under us */
			return -1;
		}
		p += r;
		n -= (uint64_t)r;
		off += r;
	}
	return 0;
}

/* Load and verify file `fn` in dirfd; NULL with errno and why. */
static coordl_ckpt_image_t *load_at(int dirfd, const char *fn, char *why, size_t whylen)
{
	coordl_ckpt_image_t *img = NULL;
	unsigned char fixed[COORDL__CKPT_FIXED], *hdr = NULL;
	struct stat st;
	uint32_t crc;
	int fd, e = 0;

	if ((fd = openat(dirfd, fn, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0) {
		e = errno == ELOOP ? EPERM : errno;
		snprintf(why, whylen, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(why, whylen, "fstat: %s", strerror(e));
		goto fail;
	}
	/* Its sections are unpickled by the Python binding: only the user's
	 * own files may be loaded. */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		e = EPERM;
		if (!S_ISREG(st.st_mode))
			snprintf(why, whylen, "not a regular file");
		else
			snprintf(why, whylen, "owned by uid %u, not %u", (unsigned)st.st_uid,
				 (unsigned)geteuid());
		goto fail;
	}
	if (!(img = calloc(1, sizeof(*img)))) {
		e = ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto fail;
	}
	img->file_bytes = (uint64_t)st.st_size;
	if ((uint64_t)st.st_size < COORDL__CKPT_FIXED) {
		e = EINVAL;
		snprintf(why, whylen, "%llu bytes: shorter than a checkpoint header",
			 (unsigned long long)st.st_size);
		goto fail;
	}
	if (pread_all(fd, fixed, sizeof(fixed), 0) < 0) {
		e = errno;
		snprintf(why, whylen, "read: %s", strerror(e));
		goto fail;
	}
	if (coordl__ckpt_parse_fixed(fixed, sizeof(fixed), &img->h, why, whylen) < 0) {
		e = EINVAL;
		goto fail;
	}
	if ((uint64_t)st.st_size != img->h.header_bytes + img->h.payload_bytes) {
		e = EINVAL;
		snprintf(why, whylen, "file is %llu bytes, its header says %llu: torn or truncated",
			 (unsigned long long)st.st_size,
			 (unsigned long long)(img->h.header_bytes + img->h.payload_bytes));
		goto fail;
	}
	if (!(hdr = malloc(img->h.header_bytes))) {
		e = ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto fail;
	}
	if (pread_all(fd, hdr, img->h.header_bytes, 0) < 0) {
		e = errno;
		snprintf(why, whylen, "read: %s", strerror(e));
		goto fail;
	}
	if (coordl__ckpt_parse_header(hdr, img->h.header_bytes, &img->h, why, whylen) < 0) {
		e = errno;
		goto fail;
	}
	img->map_bytes = img->h.payload_bytes ? img->h.payload_bytes : 1;
	if ((size_t)img->map_bytes != img->map_bytes || !(img->payload = coordl__ckpt_big_alloc(img->map_bytes))) {
		e = ENOMEM;
		snprintf(why, whylen, "payload of %llu bytes: out of memory",
			 (unsigned long long)img->h.payload_bytes);
		goto fail;
	}
	if (pread_all(fd, img->payload, img->h.payload_bytes, (off_t)img->h.header_bytes) < 0) {
		e = errno;
		snprintf(why, whylen, "read: %s", e == EINVAL ? "file shrank while read" : strerror(e));
		goto fail;
	}
	crc = coordl__crc32c(0, img->payload, (size_t)img->h.payload_bytes);
	if (crc != img->h.payload_crc) {
		e = EINVAL;
		snprintf(why, whylen, "payload checksum 0x%08x does not match 0x%08x", crc,
			 img->h.payload_crc);
		goto fail;
	}
	free(hdr);
	close(fd);
	return img;
fail:
	free(hdr);
	if (fd >= 0)
		close(fd);
	coordl_ckpt_image_free(img);
	errno = e ? e : EINVAL;
	return NULL;
}

coordl_ckpt_image_t *coordl_ckpt_load_file(const char *path, coordl_error_t *err)
{
	coordl_ckpt_image_t *img;
	char why[200];

	if (!path) {
		coordl__errprintf(err, EINVAL, "checkpoint path is NULL");
		return NULL;
	}
	if (!(img = load_at(AT_FDCWD, path, why, sizeof(why))))
		coordl__errprintf(err, errno, "checkpoint %s: %s", path, why);
	return img;
}

coordl_ckpt_image_t *coordl_ckpt_load_latest(const char *dir, const char *name,
					     coordl_ckpt_scan_t *scan, coordl_error_t *err)
{
	coordl_ckpt_image_t *img = NULL;
	coordl_ckpt_scan_t sc;
	uint64_t *seqs = NULL;
	size_t n = 0;
	int dirfd;

	memset(&sc, 0, sizeof(sc));
	if (!name)
		name = "ckpt";
	if (!dir || !coordl__ckpt_prefix_valid(name)) {
		coordl__errprintf(err, EINVAL, "checkpoint directory or name '%.40s' invalid", name);
		goto out;
	}
	if ((dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		coordl__errprintf(err, errno, "checkpoint directory %s: %s", dir, strerror(errno));
		goto out;
	}
	if (coordl__ckpt_list(dirfd, name, 0, &seqs, &n) < 0) {
		coordl__errprintf(err, errno, "checkpoint directory %s: %s", dir, strerror(errno));
		close(dirfd);
		goto out;
	}
	sc.files = (int)n;
	for (size_t i = n; i-- > 0 && !img;) {
		char fn[COORDL__CKPT_FILE_NAME_MAX], why[150];

		coordl__ckpt_final_name(fn, sizeof(fn), name, seqs[i]);
		if ((img = load_at(dirfd, fn, why, sizeof(why))))
			break;
		if (errno == ENOMEM) {
			coordl__errprintf(err, ENOMEM, "checkpoint %s/%s: %s", dir, fn, why);
			close(dirfd);
			goto out;
		}
		if (sc.skipped++ == 0)
			snprintf(sc.why, sizeof(sc.why), "%s: %s", fn, why);
	}
	close(dirfd);
	if (!img) {
		if (sc.skipped)
			coordl__errprintf(err, ENOENT,
					  "no usable checkpoint '%s' in %s (%d skipped; newest: %s)",
					  name, dir, sc.skipped, sc.why);
		else
			coordl__errprintf(err, ENOENT, "no checkpoint '%s' in %s", name, dir);
	}
out:
	free(seqs);
	if (scan)
		*scan = sc;
	return img;
}

uint64_t coordl_ckpt_image_iteration(const coordl_ckpt_image_t *img)
{
	return img ? img->h.iteration : 0;
}

uint64_t coordl_ckpt_image_sequence(const coordl_ckpt_image_t *img)
{
	return img ? img->h.sequence : 0;
}

uint64_t coordl_ckpt_image_bytes(const coordl_ckpt_image_t *img)
{
	return img ? img->file_bytes : 0;
}

int coordl_ckpt_image_sections(const coordl_ckpt_image_t *img)
{
	return img ? (int)img->h.nsections : 0;
}

const char *coordl_ckpt_image_section_name(const coordl_ckpt_image_t *img, int i)
{
	if (!img || i < 0 || (uint32_t)i >= img->h.nsections)
		return NULL;
	return img->h.sec[i].name;
}

const void *coordl_ckpt_image_section(const coordl_ckpt_image_t *img, const char *name,
				      uint64_t *n)
{
	if (img && name)
		for (uint32_t i = 0; i < img->h.nsections; i++)
			if (strcmp(img->h.sec[i].name, name) == 0) {
				if (n)
					*n = img->h.sec[i].length;
				return img->payload + img->h.sec[i].offset;
			}
	errno = ENOENT;
	return NULL;
}
