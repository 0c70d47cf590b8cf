/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * common/parse.h: the one grammar for the numbers, sizes, booleans, CPU
 * lists and names that Synergy's programs and libraries take from users,
 * admins, the environment and their own files. Every program parses a
 * value of a kind the same way; common/test/parse.c tests each grammar once.
 *
 * Integer  decimal digits, at least one; a leading '-' only where the range
 *          allows negative values. No '+', spaces, hex or suffix: " 1",
 *          "+1", "0x10" and "1k" are errors, "007" is 7.
 * Real     an integer as above, optionally followed by '.' and digits (or
 *          '.' and digits alone: ".5"), and by an exponent e[+-]digits.
 *          No "inf", "nan", hex or spaces. Always with a '.' (never the
 *          locale's decimal comma).
 * Size     a non-negative real, then optionally a unit: K, M, G or T (either
 *          case, powers of 1024), optionally followed by "i" and/or by "B"
 *          (or "b"); "B" alone means bytes. So "512M", "1.5G", "1.5GiB",
 *          "4kB" and "100B" all parse; "1 G", "1KIB", "1P" and "-1" do not.
 *          A fraction of a byte is dropped (0.1K is 102 bytes).
 * Boolean  yes/no, on/off, true/false, 1/0, in any case.
 * CPU list the kernel's cpuset syntax: ranges N or N-M (N <= M) joined by
 *          commas, "0-3,8"; no spaces or empty entries; one final newline
 *          allowed (as the kernel writes the files). The empty list is
 *          valid syntax; a caller that needs a CPU refuses it.
 * Key      a profile key (or any short name used as a file name): 1..64 of
 *          [A-Za-z0-9_.-], not starting with '.'.
 *
 * Every parser returns 0 and sets *out, or -1 with errno EINVAL (not that
 * grammar) or ERANGE (outside [min, max], or too large to represent) and
 * *out untouched. Nothing here logs or allocates, except syn_parse_cpus's
 * callback if it does.
 */
#ifndef SYN_COMMON_PARSE_H
#define SYN_COMMON_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Integers in [min, max]. The _n forms parse the first n bytes of s, for
 * numbers inside a longer text (a field, a range). */
int syn_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int syn_parse_u64n(const char *s, size_t n, uint64_t min, uint64_t max, uint64_t *out);
int syn_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/* A real in [min, max] (finite). */
int syn_parse_double(const char *s, double min, double max, double *out);
int syn_parse_doublen(const char *s, size_t n, double min, double max, double *out);

/* A size in bytes, in [min, max]. */
int syn_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* The same size as a real number of bytes, its fraction kept (a cache of
 * "20.8G" per GPU is exactly 20.8 GiB to a model). */
int syn_parse_size_real(const char *s, double min, double max, double *out);

/* A boolean: *out is 1 or 0. */
int syn_parse_bool(const char *s, int *out);

/*
 * Walk a CPU list: fn(lo, hi, arg) once per range in order (lo <= hi <
 * limit), when fn is not NULL. The whole list is checked before fn is first
 * called, so a malformed list calls it never. A non-zero return of fn stops
 * the walk and is returned. Returns 0, or -1 with EINVAL (malformed, or a
 * CPU at or above limit).
 */
int syn_parse_cpus(const char *s, unsigned limit, int (*fn)(unsigned lo, unsigned hi, void *arg),
		   void *arg);

/* The longest key (profile keys, node names used as file names). */
#define SYN_KEY_MAX 64

/* 1 if key is valid (the grammar above), else 0. Such a key is safe as a
 * file name component. */
int syn_key_valid(const char *key);

/* The longest path an admin may configure, with its NUL. */
#define SYN_PATH_MAX 256

/* 1 if path is an acceptable admin path: absolute, at most SYN_PATH_MAX-1
 * bytes, no "." or ".." component, no whitespace or control characters. */
int syn_path_ok(const char *path);

/* 1 if name is a plausible account name ([a-z_][a-z0-9_.-]{0,31}). */
int syn_user_valid(const char *name);

#endif
