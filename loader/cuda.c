/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cuda.c: pinned buffers and asynchronous copies (see cuda.h).
 *
 * Uses only the CUDA runtime API (cudart), so no nvcc is needed to build.
 * Device buffers are allocated lazily on the first copy, so a loader created
 * with pin_memory on a machine that never calls coordl_to_device does not
 * reserve device memory.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "loader/cuda.h"
#include "loader/util.h"

struct coordl__cuda {
	cudaStream_t stream;
	int nslots;
	size_t bytes;
	void **dev;
	cudaEvent_t *ev;
	int *pending;
};

void *coordl__cuda_host_alloc(size_t n)
{
	void *p = NULL;
	int count = 0;

	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
		errno = ENOTSUP;
		return NULL;
	}
	if (cudaHostAlloc(&p, n, cudaHostAllocPortable) != cudaSuccess) {
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void coordl__cuda_host_free(void *p)
{
	if (p)
		cudaFreeHost(p);
}

coordl__cuda_t *coordl__cuda_create(int nslots, size_t bytes, coordl_error_t *err)
{
	coordl__cuda_t *cu;
	cudaError_t ce;
	int count = 0;

	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
		coordl__errprintf(err, ENOTSUP, "no CUDA device");
		return NULL;
	}
	if (!(cu = calloc(1, sizeof(*cu))) || !(cu->dev = calloc((size_t)nslots, sizeof(void *))) ||
	    !(cu->ev = calloc((size_t)nslots, sizeof(cudaEvent_t))) ||
	    !(cu->pending = calloc((size_t)nslots, sizeof(int)))) {
		coordl__errprintf(err, ENOMEM, "out of memory");
		goto fail;
	}
	cu->nslots = nslots;
	cu->bytes = bytes;
	if ((ce = cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking)) != cudaSuccess) {
		coordl__errprintf(err, ENOTSUP, "cudaStreamCreate: %s", cudaGetErrorString(ce));
		goto fail;
	}
	for (int i = 0; i < nslots; i++) {
		if ((ce = cudaEventCreateWithFlags(&cu->ev[i], cudaEventDisableTiming)) != cudaSuccess) {
			coordl__errprintf(err, ENOMEM, "cudaEventCreate (slot %d): %s", i,
					  cudaGetErrorString(ce));
			cu->nslots = i;
			goto fail;
		}
	}
	return cu;
fail:
	coordl__cuda_destroy(cu);
	return NULL;
}

void coordl__cuda_destroy(coordl__cuda_t *cu)
{
	int e = errno;

	if (!cu)
		return;
	if (cu->stream)
		cudaStreamSynchronize(cu->stream);
	for (int i = 0; i < cu->nslots; i++) {
		if (cu->dev && cu->dev[i])
			cudaFree(cu->dev[i]);
		if (cu->ev)
			cudaEventDestroy(cu->ev[i]);
	}
	if (cu->stream)
		cudaStreamDestroy(cu->stream);
	free(cu->dev);
	free(cu->ev);
	free(cu->pending);
	free(cu);
	errno = e;
}

int coordl__cuda_copy(coordl__cuda_t *cu, int slot, const void *src, size_t n, int async,
		      void **dev, coordl_error_t *err)
{
	cudaError_t ce;

	if (slot < 0 || slot >= cu->nslots || n > cu->bytes)
		return coordl__errprintf(err, EINVAL,
					 "slot %d, %zu bytes: batch does not belong to this loader", slot, n);
	if (!cu->dev[slot] && (ce = cudaMalloc(&cu->dev[slot], cu->bytes)) != cudaSuccess) {
		cu->dev[slot] = NULL;
		return coordl__errprintf(err, ENOMEM, "cudaMalloc of %zu bytes: %s", cu->bytes,
					 cudaGetErrorString(ce));
	}
	if (async) {
		if ((ce = cudaMemcpyAsync(cu->dev[slot], src, n, cudaMemcpyHostToDevice, cu->stream)) !=
			    cudaSuccess ||
		    (ce = cudaEventRecord(cu->ev[slot], cu->stream)) != cudaSuccess)
			return coordl__errprintf(err, EIO, "cudaMemcpyAsync of %zu bytes: %s", n,
						 cudaGetErrorString(ce));
		cu->pending[slot] = 1;
	} else if ((ce = cudaMemcpy(cu->dev[slot], src, n, cudaMemcpyHostToDevice)) != cudaSuccess) {
		return coordl__errprintf(err, EIO, "cudaMemcpy of %zu bytes: %s", n, cudaGetErrorString(ce));
	}
	*dev = cu->dev[slot];
	return 0;
}

void coordl__cuda_wait(coordl__cuda_t *cu, int slot)
{
	if (cu && slot >= 0 && slot < cu->nslots && cu->pending[slot]) {
		cudaEventSynchronize(cu->ev[slot]);
		cu->pending[slot] = 0;
	}
}

void *coordl__cuda_stream(coordl__cuda_t *cu)
{
	return cu ? (void *)cu->stream : NULL;
}
