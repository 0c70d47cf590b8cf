/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cuda.t: CUDA ingestion. With a device: pinned batch buffers, an
 * asynchronous copy per batch whose device contents equal the host batch,
 * and buffers reused safely after release. Without CUDA in the build, or
 * without a device, coordl_to_device and pin_memory report ENOTSUP; the
 * device part is skipped.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "coordl.h"
#include "tests/tap.h"
#include "loader/test/testdata.h"

static char root[1024];

static coordl_loader_t *make(int pin, coordl_error_t *err)
{
	coordl_config_t cfg;

	coordl_config_init(&cfg);
	cfg.path = root;
	cfg.out_size = 32;
	cfg.batch_size = 4;
	cfg.threads = 2;
	cfg.cache_bytes = 0;
	cfg.pin_memory = pin;
	return coordl_create(&cfg, err);
}

int main(void)
{
	char *dir = td_tmpdir("cuda");
	coordl_error_t err = { "" };
	coordl_loader_t *ld;
	coordl_batch_t *b;
	int ndev = 0;

	snprintf(root, sizeof(root), "%s/data", dir);
	if (td_imagefolder(root, 2, 8) < 0)
		bail_out("cannot write test data");
#ifdef HAVE_CUDA
	if (cudaGetDeviceCount(&ndev) != cudaSuccess)
		ndev = 0;
#endif
	if (ndev == 0) {
		ld = make(1, &err);
		ok(coordl_cuda_stream(NULL) == NULL && !ld && errno == ENOTSUP &&
		   strstr(err.text, "pin_memory"),
		   "pin_memory=1 without a usable device: ENOTSUP naming pin_memory (%s)", err.text);
		coordl_destroy(ld);
		ld = make(0, &err);
		coordl_set_epoch(ld, 0, NULL);
		ok(ld && coordl_next(ld, &b, NULL) == 1 && coordl_to_device(ld, b, &err) == -1 &&
		   errno == ENOTSUP && b->device_data == NULL,
		   "coordl_to_device without a device: ENOTSUP (%s)", err.text);
		coordl_destroy(ld);
		td_rmrf(dir);
		free(dir);
#ifdef HAVE_CUDA
		skip(1, "no CUDA device");
#else
		skip(1, "built without CUDA");
#endif
		return done_testing();
	}
#ifdef HAVE_CUDA
	{
		int good = 1, n = 0;
		void *host = NULL;
		ld = make(1, &err);
		ok(ld != NULL, "pin_memory=1 loader created (%s)", ld ? "ok" : err.text);
		if (!ld)
			bail_out("no loader");
		coordl_set_epoch(ld, 0, NULL);
		while (coordl_next(ld, &b, &err) == 1) {
			if (coordl_to_device(ld, b, &err) < 0 || !b->device_data) {
				diag("to_device: %s", err.text);
				good = 0;
			} else {
				void *grown = realloc(host, b->data_bytes);
				if (!grown)
					bail_out("out of memory");
				host = grown;
				/* The copy is asynchronous: wait for it first. */
				if (coordl_device_wait(ld, b) < 0 ||
				    cudaMemcpy(host, b->device_data, b->data_bytes,
					       cudaMemcpyDeviceToHost) != cudaSuccess ||
				    memcmp(host, b->data, b->data_bytes) != 0)
					good = 0;
			}
			coordl_release(ld, b);
			n++;
		}
		ok(good && n == 4, "every batch reached the device intact (%d batches)", n);
		ok(coordl_cuda_stream(ld) != NULL, "the loader's stream is exposed");
		/* A second epoch reuses the pinned buffers and device slots. */
		ok(coordl_set_epoch(ld, 1, NULL) == 0 && coordl_next(ld, &b, &err) == 1 &&
		   coordl_to_device(ld, b, &err) == 0, "buffers are reused in the next epoch");
		coordl_release(ld, b);
		free(host);
		coordl_destroy(ld);
	}
#endif
	td_rmrf(dir);
	free(dir);
	return done_testing();
}
