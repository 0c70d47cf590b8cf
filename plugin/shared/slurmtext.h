/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tuner.h: the parsers of Slurm's text fields that synergyd and
 * job_submit share, apart from libslurm so that they are unit-tested (and
 * fuzzed) without a cluster.
 */
#ifndef SYN_PLUGIN_TUNER_H
#define SYN_PLUGIN_TUNER_H

#include <stdint.h>

/*
 * GPUs in a node's Gres or GresUsed string ("gpu:2", "gpu:a100:4(S:0-1)",
 * "gpu:1(IDX:0),shard:0", "gpu:(null):0(IDX:N/A)"): the sum over gpu
 * entries. Returns the count, 0 for none or NULL/"(null)"/"N/A".
 */
int syn__gres_gpus(const char *gres);

/*
 * DefCpuPerGPU and DefMemPerGPU (MB) from a partition's JobDefaults string
 * ("DefCpuPerGPU=1,DefMemPerGPU=512"). Missing entries are left as they
 * are. Returns 0, or -1 with errno EINVAL for a malformed number.
 */
int syn__job_defaults(const char *s, uint64_t *cpu_per_gpu, uint64_t *mem_per_gpu);

/* The profile key in a Synergy AdminComment ("synergy: key=K ..."), copied
 * to key (size len); 0, or -1 when the comment is not a sized-job comment
 * (only "synergy: key=K cpus=..." comments are). */
int syn__comment_key(const char *comment, char *key, int len);

/*
 * The GPUs per node a request asks for: from tres_per_node ("gres:gpu:2",
 * "gres:gpu:a100:2", "gres/gpu=2", possibly among other TRES) or, failing
 * that, tres_per_job divided over nodes. 0 when none is asked for.
 */
int syn__gpus_per_node(const char *tres_per_node, const char *tres_per_job, uint32_t nodes);

#endif
