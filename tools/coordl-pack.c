/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coordl-pack: convert an ImageFolder tree or a file list into coordl
 * shards: a few large .cds files holding the encoded items back to back,
 * and a text index (.cdx) that libcoordl opens as a COORDL_SOURCE_SHARDS
 * dataset. Reading shards needs one open per shard instead of one per item
 * and keeps the bytes of a class together on disk.
 *
 * Items are written in dataset order (class, then file name), so labels and
 * indices of the packed set equal those of the original. Unreadable items
 * are left out with a warning. The index is written to a temporary name and
 * renamed at the end, so a crash never leaves a valid-looking index over
 * incomplete shards.
 *
 * With --manifest it writes, instead, the manifest an ImageFolder needs to
 * be read over HTTP (COORDL_MANIFEST_NAME in the tree's root: the item
 * list a directory scan would give, since a web server has no listing
 * libcoordl could trust).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/file.h"
#include "common/parse.h"
#include "coordl.h"
#include "loader/env.h"
#include "loader/source.h"
#include "loader/util.h"

static const char *prog = "coordl-pack";

#include "tools/die.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [OPTIONS] DATASET OUTPUT.cdx\n"
		"       %s --manifest DIR\n"
		"Pack an ImageFolder directory or a file list into coordl shards, or write\n"
		"the manifest (DIR/" COORDL_MANIFEST_NAME ") that serves DIR over HTTP.\n"
		"\n"
		"  -m, --manifest          write DIR/" COORDL_MANIFEST_NAME " for the ImageFolder DIR\n"
		"  -s, --shard-size=BYTES  target bytes per shard file, K/M/G/T suffixes (default 256M)\n"
		"  -t, --type=KIND         dataset kind: auto, imagefolder, list (default auto)\n"
		"  -q, --quiet             no progress output\n"
		"  -h, --help              show this help and exit\n"
		"\n"
		"Writes OUTPUT.cdx and OUTPUT-NNNNN.cds next to it; open OUTPUT.cdx with\n"
		"libcoordl or coordl-bench. See coordl-pack(1).\n",
		prog, prog);
}


/* Item and class names go into a line-based index: refuse newlines. */
static int has_newline(const char *s)
{
	return strchr(s, '\n') != NULL || strchr(s, '\r') != NULL;
}

/* DIR/coordl.manifest: "<bytes> <class>/<file>" for every item of the
 * ImageFolder DIR, in its order, written atomically (common/file.h). */
static int write_manifest(const char *dir, int quiet)
{
	coordl_error_t err = { "" };
	coordl__source_t *src = coordl__source_open(dir, COORDL_SOURCE_IMAGEFOLDER, &err);
	char path[PATH_MAX];
	syn_atomic_t a;
	FILE *f;
	size_t n;

	if (!src)
		die("%s", err.text);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, COORDL_MANIFEST_NAME) >=
	    sizeof(path))
		die("%s: path too long", dir);
	if (syn_atomic_begin(&a, AT_FDCWD, path, 0644) < 0 || !(f = syn_atomic_stream(&a)))
		die("%s: %s", path, strerror(errno));
	fprintf(f, "%s\n", COORDL_MANIFEST_MAGIC);
	n = coordl__source_count(src);
	for (size_t i = 0; i < n; i++) {
		const char *name = coordl__source_item_name(src, i);
		if (has_newline(name)) {
			fprintf(stderr, "%s: warning: skipping an item whose name has a newline\n", prog);
			continue;
		}
		fprintf(f, "%llu %s\n", (unsigned long long)coordl__source_item_size(src, i), name);
	}
	if (syn_atomic_commit(&a) < 0)
		die("%s: %s", path, strerror(errno));
	if (!quiet)
		fprintf(stderr, "%s: wrote %s: %zu items in %d classes\n", prog, path, n,
			coordl__source_classes(src));
	coordl__source_destroy(src);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "shard-size", required_argument, NULL, 's' },
		{ "type", required_argument, NULL, 't' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "manifest", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t shard_size = 256ULL << 20;
	int kind = COORDL_SOURCE_AUTO, quiet = 0, manifest = 0, c;
	const char *in, *out;
	char *outdup, *dir, *base, shard_path[PATH_MAX];
	syn_atomic_t ai;
	size_t olen, n;
	coordl_error_t err = { "" };
	coordl__source_t *src;
	FILE *idx, *items, *shard = NULL;
	uint8_t *buf = NULL;
	size_t cap = 0, len;
	uint64_t off = 0, written = 0;
	unsigned nshards = 0;
	size_t skipped = 0;
	double t0 = coordl__now(), last = 0;
	char why[128];

	while ((c = getopt_long(argc, argv, "s:t:qmh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (syn_parse_size(optarg, 0, INT64_MAX, &shard_size) < 0 ||
			    shard_size == 0)
				die("--shard-size '%s': expected bytes > 0 with optional K/M/G/T", optarg);
			break;
		case 't':
			if (strcmp(optarg, "auto") == 0)
				kind = COORDL_SOURCE_AUTO;
			else if (strcmp(optarg, "imagefolder") == 0)
				kind = COORDL_SOURCE_IMAGEFOLDER;
			else if (strcmp(optarg, "list") == 0)
				kind = COORDL_SOURCE_FILELIST;
			else
				die("--type '%s': expected auto, imagefolder or list", optarg);
			break;
		case 'q':
			quiet = 1;
			break;
		case 'm':
			manifest = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (manifest) {
		if (argc - optind != 1) {
			usage(stderr);
			return 2;
		}
		return write_manifest(argv[optind], quiet);
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	in = argv[optind];
	out = argv[optind + 1];
	olen = strlen(out);
	if (olen < 5 || strcmp(out + olen - 4, ".cdx") != 0)
		die("OUTPUT '%s': must end in .cdx", out);
	if (!(src = coordl__source_open(in, kind, &err)))
		die("%s", err.text);
	if (coordl__source_kind(src) == COORDL_SOURCE_SHARDS)
		die("%s: already a shard index", in);

	outdup = strdup(out);
	dir = dirname(outdup);
	base = strdup(basename((char *)out));
	if (!outdup || !base)
		die("out of memory");
	base[strlen(base) - 4] = '\0';

	/* Items go to a temporary list first: the index starts with the
	 * shard list, which is known only at the end. */
	if (!(items = tmpfile()))
		die("temporary file: %s", strerror(errno));
	n = coordl__source_count(src);
	for (size_t i = 0; i < n; i++) {
		const char *name = coordl__source_item_name(src, i);
		if (coordl__source_fetch(src, i, &buf, &cap, &len, why, sizeof(why)) < 0) {
			fprintf(stderr, "%s: warning: skipping %s: %s\n", prog, name, why);
			skipped++;
			continue;
		}
		if (has_newline(name)) {
			fprintf(stderr, "%s: warning: skipping an item whose name has a newline\n", prog);
			skipped++;
			continue;
		}
		if (!shard || (off > 0 && off + len > shard_size)) {
			if (shard && fclose(shard) != 0)
				die("%s: %s", shard_path, strerror(errno));
			snprintf(shard_path, sizeof(shard_path), "%s/%s-%05u.cds", dir, base, nshards);
			if (!(shard = fopen(shard_path, "wb")))
				die("%s: %s", shard_path, strerror(errno));
			nshards++;
			off = 0;
		}
		if (len && fwrite(buf, 1, len, shard) != len)
			die("%s: %s", shard_path, strerror(errno));
		fprintf(items, "%u %llu %zu %d %s\n", nshards - 1, (unsigned long long)off, len,
			coordl__source_label(src, i), name);
		off += len;
		written += len;
		if (!quiet && (coordl__now() - last > 0.5 || i + 1 == n)) {
			last = coordl__now();
			fprintf(stderr, "\r%s: %zu/%zu items, %.1f MB, %u shards", prog, i + 1, n,
				(double)written / 1e6, nshards);
		}
	}
	if (shard && fclose(shard) != 0)
		die("%s: %s", shard_path, strerror(errno));
	if (n == skipped)
		die("%s: no readable item", in);

	/* The index last and atomically: a crash never leaves a valid-looking
	 * index over incomplete shards. */
	if (syn_atomic_begin(&ai, AT_FDCWD, out, 0644) < 0 || !(idx = syn_atomic_stream(&ai)))
		die("%s: %s", out, strerror(errno));
	fprintf(idx, "coordl-index 1\nclasses %d\n", coordl__source_classes(src));
	for (int l = 0; l < coordl__source_classes(src); l++) {
		const char *cn = coordl__source_class_name(src, l);
		if (has_newline(cn))
			die("class name with a newline");
		/* File lists have numeric labels only: name classes by number. */
		if (*cn)
			fprintf(idx, "%s\n", cn);
		else
			fprintf(idx, "%d\n", l);
	}
	fprintf(idx, "shards %u\n", nshards);
	for (unsigned s = 0; s < nshards; s++)
		fprintf(idx, "%s-%05u.cds\n", base, s);
	fprintf(idx, "items %zu\n", n - skipped);
	rewind(items);
	while ((c = getc(items)) != EOF)
		putc(c, idx);
	if (ferror(items))
		die("%s: reading the temporary item list failed", out);
	if (syn_atomic_commit(&ai) < 0)
		die("%s: %s", out, strerror(errno));
	fclose(items);
	if (!quiet)
		fprintf(stderr, "\n%s: wrote %s: %zu items (%zu skipped), %u shards, %.1f MB in %.1f s\n",
			prog, out, n - skipped, skipped, nshards, (double)written / 1e6, coordl__now() - t0);
	free(buf);
	free(outdup);
	free(base);
	coordl__source_destroy(src);
	return 0;
}
