/*
 * tuner.h: the parts of the synergyd tuner that read Slurm's text fields,
 * apart from libslurm so that they are unit-tested without a cluster.
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

#endif
