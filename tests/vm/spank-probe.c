/*
 * spank-probe.c: a SPANK plugin that only looks. For tests/vm/spank-probe.sh,
 * which builds it inside a root file system of tools/build-slurm-rootfs
 * against that release's <slurm/spank.h> and loads it into a throwaway
 * cluster in the guest, to see what each hook of each Slurm release offers
 * a plugin that must find a job's cgroup (doc/slurm-versions.md): the job
 * and step ids (spank_get_item), SLURM_JOB_ID and SLURM_JOB_SLUID in the
 * job's environment (spank_getenv) and in the process's own (getenv; the
 * prolog's and epilog's environment), what the client put into the job
 * control environment (SPANK_PROBE_* in the prolog), and the cgroup of the
 * calling process.
 *
 * plugstack.conf: optional /path/spank_probe.so dir=DIR. Each call of each
 * hook appends one line to DIR/probe.log: key=value pairs separated by tabs
 * ("-" for an item or variable that is not there). In the local and
 * allocator contexts (srun, sbatch, salloc) slurm_spank_init_post_opt sets
 * PROBE_FROM_CLIENT=1 with spank_job_control_setenv, which the prolog
 * should see as SPANK_PROBE_FROM_CLIENT. Every hook returns 0: a probe must
 * not change what it watches.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(spank_probe, 1);

static const char *ctx_name(void)
{
	switch (spank_context()) {
	case S_CTX_LOCAL: return "local";
	case S_CTX_REMOTE: return "remote";
	case S_CTX_ALLOCATOR: return "allocator";
	case S_CTX_SLURMD: return "slurmd";
	case S_CTX_JOB_SCRIPT: return "job_script";
	default: return "error";
	}
}

/* dir= from plugstack.conf, or NULL. */
static const char *arg_dir(int ac, char **av)
{
	for (int i = 0; i < ac; i++)
		if (strncmp(av[i], "dir=", 4) == 0)
			return av[i] + 4;
	return NULL;
}

/* The calling process's cgroup v2 path (the "0::" line), or "-". */
static void own_cgroup(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[1024];

	snprintf(buf, len, "-");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, len, "%s", line + 3);
			break;
		}
	}
	fclose(f);
}

static void log_hook(spank_t sp, int ac, char **av, const char *hook)
{
	const char *dir = arg_dir(ac, av);
	char path[4096], line[8192], cg[1024], jenv[256], senv[256], ctl[256];
	uint32_t job = 0, step = 0;
	const char *p;
	int n, fd;

	if (!dir)
		return;
	n = snprintf(line, sizeof(line), "hook=%s\tctx=%s\tpid=%d", hook, ctx_name(), (int)getpid());
	if (spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS)
		n += snprintf(line + n, sizeof(line) - n, "\titem_job_id=%u", job);
	else
		n += snprintf(line + n, sizeof(line) - n, "\titem_job_id=-");
	if (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS)
		n += snprintf(line + n, sizeof(line) - n, "\titem_step_id=%u", step);
	else
		n += snprintf(line + n, sizeof(line) - n, "\titem_step_id=-");
	if (spank_getenv(sp, "SLURM_JOB_ID", jenv, sizeof(jenv)) != ESPANK_SUCCESS)
		snprintf(jenv, sizeof(jenv), "-");
	if (spank_getenv(sp, "SLURM_JOB_SLUID", senv, sizeof(senv)) != ESPANK_SUCCESS)
		snprintf(senv, sizeof(senv), "-");
	n += snprintf(line + n, sizeof(line) - n, "\tjobenv_SLURM_JOB_ID=%s\tjobenv_SLURM_JOB_SLUID=%s",
		      jenv, senv);
	p = getenv("SLURM_JOB_ID");
	n += snprintf(line + n, sizeof(line) - n, "\tenv_SLURM_JOB_ID=%s", p ? p : "-");
	p = getenv("SLURM_JOB_SLUID");
	n += snprintf(line + n, sizeof(line) - n, "\tenv_SLURM_JOB_SLUID=%s", p ? p : "-");
	p = getenv("SLURM_SCRIPT_CONTEXT");
	n += snprintf(line + n, sizeof(line) - n, "\tenv_SLURM_SCRIPT_CONTEXT=%s", p ? p : "-");
	p = getenv("SPANK_PROBE_FROM_CLIENT");
	n += snprintf(line + n, sizeof(line) - n, "\tenv_SPANK_PROBE_FROM_CLIENT=%s", p ? p : "-");
	p = getenv("PROBE_FROM_CLIENT");
	n += snprintf(line + n, sizeof(line) - n, "\tenv_PROBE_FROM_CLIENT=%s", p ? p : "-");
	if (spank_getenv(sp, "SPANK_PROBE_FROM_CLIENT", ctl, sizeof(ctl)) != ESPANK_SUCCESS)
		snprintf(ctl, sizeof(ctl), "-");
	n += snprintf(line + n, sizeof(line) - n, "\tjobenv_SPANK_PROBE_FROM_CLIENT=%s", ctl);
	if (spank_getenv(sp, "PROBE_FROM_CLIENT", ctl, sizeof(ctl)) != ESPANK_SUCCESS)
		snprintf(ctl, sizeof(ctl), "-");
	n += snprintf(line + n, sizeof(line) - n, "\tjobenv_PROBE_FROM_CLIENT=%s", ctl);
	own_cgroup(cg, sizeof(cg));
	n += snprintf(line + n, sizeof(line) - n, "\tcgroup=%s\n", cg);
	if (n >= (int)sizeof(line))
		n = sizeof(line) - 1;
	snprintf(path, sizeof(path), "%s/probe.log", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	/* One write per line: O_APPEND keeps lines of concurrent hooks whole. */
	if (write(fd, line, n) != n)
		slurm_error("spank_probe: short write to %s", path);
	close(fd);
}

#define HOOK(name) \
	int slurm_spank_##name(spank_t sp, int ac, char **av) \
	{ \
		log_hook(sp, ac, av, #name); \
		return 0; \
	}

HOOK(init)
HOOK(job_prolog)
HOOK(local_user_init)
HOOK(user_init)
HOOK(task_init_privileged)
HOOK(task_init)
HOOK(task_post_fork)
HOOK(task_exit)
HOOK(job_epilog)
HOOK(slurmd_exit)
HOOK(exit)

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	log_hook(sp, ac, av, "init_post_opt");
	if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR)
		spank_job_control_setenv(sp, "PROBE_FROM_CLIENT", "1", 1);
	return 0;
}
