/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tuner.t: synergyd's readers of Slurm text fields (plugin/tuner.c), with
 * the formats slurmctld 22.05 prints and malformed variants.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "tests/tap.h"
#include "plugin/shared/slurmtext.h"

int main(void)
{
	static const struct { const char *gres; int gpus; } g[] = {
		{ "gpu:2", 2 }, { "gpu:a100:4(S:0-1)", 4 }, { "gpu:1(IDX:0),shard:4", 1 },
		{ "gpu:(null):0(IDX:N/A)", 0 }, { "gpu:a100:1(IDX:0,2),gpu:v100:2(IDX:1)", 3 },
		{ "shard:8", 0 }, { "(null)", 0 }, { "N/A", 0 }, { "", 0 }, { NULL, 0 },
		{ "gpu:x", 0 }, { "gpus:4", 0 }, { "gpu:99999999999999999999", 0 },
	};
	uint64_t cpu = 7, mem = 9;
	char key[65];
	size_t i;

	for (i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		is_int(syn__gres_gpus(g[i].gres), g[i].gpus, g[i].gres ? g[i].gres : "NULL");

	ok(syn__job_defaults("DefCpuPerGPU=1,DefMemPerGPU=512", &cpu, &mem) == 0 &&
	   cpu == 1 && mem == 512, "JobDefaults with both");
	cpu = 7;
	mem = 9;
	ok(syn__job_defaults("DefMemPerGPU=64000", &cpu, &mem) == 0 && cpu == 7 && mem == 64000,
	   "missing entry left alone");
	ok(syn__job_defaults(NULL, &cpu, &mem) == 0, "NULL JobDefaults");
	ok(syn__job_defaults("DefCpuPerGPU=-1", &cpu, &mem) == -1 && errno == EINVAL,
	   "negative number refused");

	ok(syn__comment_key("synergy: key=img cpus=2 mem=2048M cache=1024M", key, sizeof(key)) == 0 &&
	   strcmp(key, "img") == 0, "key from a sized-job comment");
	ok(syn__comment_key("synergy: key=img no profile: GPU-proportional", key, sizeof(key)) == -1,
	   "an unsized job's comment is not a candidate");
	ok(syn__comment_key("synergy: key=img downgraded to GPU-proportional by synergyd", key,
			    sizeof(key)) == -1, "a downgraded job is not downgraded twice");
	ok(syn__comment_key("synergy: key=../x cpus=2", key, sizeof(key)) == -1, "invalid key refused");
	ok(syn__comment_key("someone else's comment", key, sizeof(key)) == -1, "foreign comment");
	ok(syn__comment_key(NULL, key, sizeof(key)) == -1, "NULL comment");
	return done_testing();
}
