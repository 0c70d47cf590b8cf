/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_trace.c: libFuzzer entry point for the simulator's untrusted input:
 * the trace CSV reader (sim_trace_read) and the --cluster description
 * parser (sim_cluster_parse). Traces come from anyone who runs synergy-sim
 * on a file they were handed, so the reader must turn every byte string
 * into either a trace whose jobs all satisfy the documented field ranges or
 * an error message, and nothing else.
 *
 * The reader takes a path, so each input is written to one scratch file in
 * a private temporary directory (made once per process). The first line of
 * the input is also handed to the cluster parser as a --cluster string.
 * Only the built-in profiles are used (no store), which keeps the target
 * free of file system state beyond the scratch file.
 *
 * Built and run by tests/fuzz/run-fuzz.sh.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reader promised these ranges; a trace outside them is a bug even
 * when nothing crashed, because the engine relies on them. */
static void check_trace(const sim_trace_t *t)
{
	for (int i = 0; i < t->n; i++) {
		const sim_job_t *j = &t->jobs[i];

		if (!(j->arrival >= 0) || !(j->duration > 0) || j->gpus < 1 || j->gpus > 4096 ||
		    !j->profile || memchr(j->model, '\0', sizeof(j->model)) == NULL)
			abort();
		if (i > 0 && t->jobs[i - 1].arrival > j->arrival)
			abort();
		/* The trials of one search share GPUs and model. */
		for (int k = 0; j->group && k < i; k++)
			if (t->jobs[k].group == j->group &&
			    (t->jobs[k].gpus != j->gpus || strcmp(t->jobs[k].model, j->model) != 0))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_scratch_path("trace", "t.csv");
	sim_profiles_t *pr;
	sim_trace_t t = { NULL, 0 };
	sim_cluster_t c = { NULL, 0, 0, 0, 0 };
	sim_error_t err;
	char *spec;
	const uint8_t *nl;
	size_t speclen;

	fuzz_write_file(path, data, size);

	if (!(pr = sim_profiles_create(NULL, &err)))
		abort();
	err.text[0] = '\0';
	if (sim_trace_read(path, pr, &t, &err) == 0) {
		check_trace(&t);
		sim_trace_free(&t);
	} else if (err.text[0] == '\0') {
		abort(); /* a refusal must say why */
	}
	sim_profiles_destroy(pr);

	nl = memchr(data, '\n', size);
	speclen = nl ? (size_t)(nl - data) : size;
	if (!(spec = fuzz_string(data, speclen)))
		return 0;
	err.text[0] = '\0';
	if (sim_cluster_parse(spec, &c, &err) == 0) {
		if (c.n_nodes < 1 || c.total_gpus < c.n_nodes)
			abort();
		sim_cluster_free(&c);
	} else if (err.text[0] == '\0') {
		abort();
	}
	free(spec);
	return 0;
}
