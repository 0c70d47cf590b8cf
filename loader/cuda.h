/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cuda.h: the optional CUDA part of libcoordl (compiled only with CUDA).
 *
 * Pinned host memory for batch buffers, one device buffer per prefetch slot,
 * and a loader-owned stream for asynchronous host-to-device copies. Each
 * slot records an event after its copy so that the host buffer is not
 * refilled while the copy still reads it.
 */
#ifndef COORDL_CUDA_H
#define COORDL_CUDA_H

#include <stddef.h>

#include "coordl.h"

typedef struct coordl__cuda coordl__cuda_t;

/* Pinned host allocation; returns NULL with errno ENOTSUP (no device) or ENOMEM. */
void *coordl__cuda_host_alloc(size_t n);
void coordl__cuda_host_free(void *p);

/* Stream and nslots device buffers of `bytes` each, allocated on first use. */
coordl__cuda_t *coordl__cuda_create(int nslots, size_t bytes, coordl_error_t *err);
void coordl__cuda_destroy(coordl__cuda_t *cu);

/* Copy n bytes of slot's host buffer to its device buffer on the stream;
 * *dev receives the device pointer. async: 1 when src is pinned. */
int coordl__cuda_copy(coordl__cuda_t *cu, int slot, const void *src, size_t n, int async,
		      void **dev, coordl_error_t *err);

/* Wait until the last copy from slot has finished reading its host buffer. */
void coordl__cuda_wait(coordl__cuda_t *cu, int slot);

/* The stream copies run on (a cudaStream_t). */
void *coordl__cuda_stream(coordl__cuda_t *cu);

#endif
