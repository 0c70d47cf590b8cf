/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * abi-layout.c: print the size and field offsets of the public structs in
 * coordl.h and coordl_ckpt.h, as the C compiler lays them out.
 *
 * The Python binding mirrors these structs with ctypes by hand; a field
 * added, removed or reordered in the header would silently shift every
 * later field, and a renumbered enum would change meaning. python/test/abi.py
 * runs this program and compares each line with what ctypes computes, so
 * such drift fails a test instead of corrupting memory. Output, one item
 * per line: "<struct> <size>", "<struct>.<field> <offset>", "<ENUM> <value>".
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>

#include "coordl.h"
#include "coordl_ckpt.h"

#define SIZE(t) printf("%s %zu\n", #t, sizeof(t))
#define FIELD(t, f) printf("%s.%s %zu\n", #t, #f, offsetof(t, f))
#define ENUM(e) printf("%s %d\n", #e, (int)(e))

int main(void)
{
	SIZE(coordl_error_t);
	FIELD(coordl_error_t, text);

	SIZE(coordl_config_t);
	FIELD(coordl_config_t, path);
	FIELD(coordl_config_t, source);
	FIELD(coordl_config_t, batch_size);
	FIELD(coordl_config_t, out_size);
	FIELD(coordl_config_t, layout);
	FIELD(coordl_config_t, mode);
	FIELD(coordl_config_t, threads);
	FIELD(coordl_config_t, cache_bytes);
	FIELD(coordl_config_t, cache_name);
	FIELD(coordl_config_t, seed);
	FIELD(coordl_config_t, shuffle);
	FIELD(coordl_config_t, rank);
	FIELD(coordl_config_t, world_size);
	FIELD(coordl_config_t, drop_last);
	FIELD(coordl_config_t, prefetch);
	FIELD(coordl_config_t, scale_min);
	FIELD(coordl_config_t, scale_max);
	FIELD(coordl_config_t, ratio_min);
	FIELD(coordl_config_t, ratio_max);
	FIELD(coordl_config_t, flip_prob);
	FIELD(coordl_config_t, mean);
	FIELD(coordl_config_t, std);
	FIELD(coordl_config_t, pin_memory);
	FIELD(coordl_config_t, cache_use);
	FIELD(coordl_config_t, io_window);
	FIELD(coordl_config_t, io_deadline_ms);
	FIELD(coordl_config_t, max_item_bytes);

	SIZE(coordl_batch_t);
	FIELD(coordl_batch_t, data);
	FIELD(coordl_batch_t, labels);
	FIELD(coordl_batch_t, indices);
	FIELD(coordl_batch_t, n);
	FIELD(coordl_batch_t, data_bytes);
	FIELD(coordl_batch_t, epoch);
	FIELD(coordl_batch_t, seq);
	FIELD(coordl_batch_t, replaced);
	FIELD(coordl_batch_t, device_data);
	FIELD(coordl_batch_t, readonly);

	SIZE(coordl_state_t);
	FIELD(coordl_state_t, seed);
	FIELD(coordl_state_t, epoch);
	FIELD(coordl_state_t, position);
	FIELD(coordl_state_t, rank);
	FIELD(coordl_state_t, world_size);

	SIZE(coordl_stats_t);
	FIELD(coordl_stats_t, epoch);
	FIELD(coordl_stats_t, samples);
	FIELD(coordl_stats_t, batches);
	FIELD(coordl_stats_t, epoch_wall);
	FIELD(coordl_stats_t, stall);
	FIELD(coordl_stats_t, prep_time);
	FIELD(coordl_stats_t, fetch_time);
	FIELD(coordl_stats_t, storage_bytes);
	FIELD(coordl_stats_t, cache_hits);
	FIELD(coordl_stats_t, cache_misses);
	FIELD(coordl_stats_t, cache_bytes_used);
	FIELD(coordl_stats_t, cache_bytes_limit);
	FIELD(coordl_stats_t, corrupt);
	FIELD(coordl_stats_t, threads);
	FIELD(coordl_stats_t, images_per_s);
	FIELD(coordl_stats_t, images_per_s_per_core);
	FIELD(coordl_stats_t, total_samples);
	FIELD(coordl_stats_t, total_corrupt);
	FIELD(coordl_stats_t, total_stall);
	FIELD(coordl_stats_t, total_wall);
	FIELD(coordl_stats_t, cache_items);
	FIELD(coordl_stats_t, cache_shrinks);
	FIELD(coordl_stats_t, cache_grows);
	FIELD(coordl_stats_t, cache_shared);
	FIELD(coordl_stats_t, requests);
	FIELD(coordl_stats_t, retries);
	FIELD(coordl_stats_t, req_latency_p50);
	FIELD(coordl_stats_t, req_latency_p90);
	FIELD(coordl_stats_t, req_latency_p99);
	FIELD(coordl_stats_t, io_window);
	FIELD(coordl_stats_t, io_inflight);
	FIELD(coordl_stats_t, io_bytes_in_flight);
	FIELD(coordl_stats_t, storage_reads);
	FIELD(coordl_stats_t, peer_nodes);
	FIELD(coordl_stats_t, peer_node_index);
	FIELD(coordl_stats_t, peers_up);
	FIELD(coordl_stats_t, peer_hits);
	FIELD(coordl_stats_t, peer_bytes);
	FIELD(coordl_stats_t, peer_absent);
	FIELD(coordl_stats_t, peer_fallbacks);
	FIELD(coordl_stats_t, peer_bad);
	FIELD(coordl_stats_t, peer_stalls);
	FIELD(coordl_stats_t, batches_prepared);
	FIELD(coordl_stats_t, batches_received);
	FIELD(coordl_stats_t, group_members);
	FIELD(coordl_stats_t, group_shared);
	FIELD(coordl_stats_t, group_batches);
	FIELD(coordl_stats_t, group_solo);
	FIELD(coordl_stats_t, group_redone);
	FIELD(coordl_stats_t, group_reaped);
	FIELD(coordl_stats_t, peer_wireup);

	SIZE(coordl_ckpt_config_t);
	FIELD(coordl_ckpt_config_t, dir);
	FIELD(coordl_ckpt_config_t, name);
	FIELD(coordl_ckpt_config_t, keep);
	FIELD(coordl_ckpt_config_t, memory);
	FIELD(coordl_ckpt_config_t, durable);

	SIZE(coordl_ckpt_stats_t);
	FIELD(coordl_ckpt_stats_t, committed);
	FIELD(coordl_ckpt_stats_t, persisted);
	FIELD(coordl_ckpt_stats_t, failed);
	FIELD(coordl_ckpt_stats_t, superseded);
	FIELD(coordl_ckpt_stats_t, last_iteration);
	FIELD(coordl_ckpt_stats_t, last_sequence);
	FIELD(coordl_ckpt_stats_t, last_bytes);
	FIELD(coordl_ckpt_stats_t, last_copy_s);
	FIELD(coordl_ckpt_stats_t, last_persist_s);
	FIELD(coordl_ckpt_stats_t, last_latency_s);
	FIELD(coordl_ckpt_stats_t, total_copy_s);
	FIELD(coordl_ckpt_stats_t, total_persist_s);
	FIELD(coordl_ckpt_stats_t, total_wait_s);
	FIELD(coordl_ckpt_stats_t, in_flight);
	FIELD(coordl_ckpt_stats_t, pinned);
	FIELD(coordl_ckpt_stats_t, buffer_bytes);
	FIELD(coordl_ckpt_stats_t, last_errno);
	FIELD(coordl_ckpt_stats_t, last_error);

	SIZE(coordl_ckpt_scan_t);
	FIELD(coordl_ckpt_scan_t, files);
	FIELD(coordl_ckpt_scan_t, skipped);
	FIELD(coordl_ckpt_scan_t, why);

	SIZE(coordl_ckpt_costs_t);
	FIELD(coordl_ckpt_costs_t, iter_s);
	FIELD(coordl_ckpt_costs_t, overhead_s);
	FIELD(coordl_ckpt_costs_t, snapshot_s);
	FIELD(coordl_ckpt_costs_t, persist_s);

	SIZE(coordl_ckpt_choice_t);
	FIELD(coordl_ckpt_choice_t, interval);
	FIELD(coordl_ckpt_choice_t, overhead);
	FIELD(coordl_ckpt_choice_t, limit);
	FIELD(coordl_ckpt_choice_t, bound_met);

	ENUM(COORDL_CKPT_MEM_AUTO);
	ENUM(COORDL_CKPT_MEM_PAGEABLE);
	ENUM(COORDL_CKPT_MEM_PINNED);
	ENUM(COORDL_CKPT_LIMIT_MIN);
	ENUM(COORDL_CKPT_LIMIT_BOUND);
	ENUM(COORDL_CKPT_LIMIT_PIPELINE);
	ENUM(COORDL_CKPT_LIMIT_MAX);

	ENUM(COORDL_SOURCE_AUTO);
	ENUM(COORDL_SOURCE_IMAGEFOLDER);
	ENUM(COORDL_SOURCE_FILELIST);
	ENUM(COORDL_SOURCE_SHARDS);
	ENUM(COORDL_LAYOUT_NCHW_F32);
	ENUM(COORDL_LAYOUT_NHWC_U8);
	ENUM(COORDL_MODE_TRAIN);
	ENUM(COORDL_MODE_EVAL);
	ENUM(COORDL_MODE_RAW);
	ENUM(COORDL_MODE_SYNTHETIC);
	ENUM(COORDL_CACHE_AUTO);
	ENUM(COORDL_CACHE_JOB);
	ENUM(COORDL_CACHE_NONE);
	ENUM(COORDL_WIREUP_NONE);
	ENUM(COORDL_WIREUP_SOCKADDR);
	ENUM(COORDL_WIREUP_PMIX);
	printf("COORDL_VERSION %d.%d\n", COORDL_VERSION_MAJOR, COORDL_VERSION_MINOR);
	return 0;
}
