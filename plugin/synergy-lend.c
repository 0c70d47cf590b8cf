/*
 * synergy-lend: show idle-core lending on this machine (root, read-only).
 *
 * For every Slurm node whose cpuset cgroup (slurm_<node>) exists here, it
 * prints the node's CPUs and, per running job, the CPUs Slurm allotted (from
 * the SPANK plugin's lending record), the CPUs its job cgroup and its
 * synergy child hold now, and which of them are lent. It reads the cgroup
 * tree and LendStateDir from synergy.conf and changes nothing.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synergy_conf.h"
#include "cgroup.h"
#include "lend.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: synergy-lend --status [-c FILE]\n"
		"Show, for each Slurm node on this machine, the CPUs each running job was\n"
		"allotted and the CPUs it holds now, lent ones included (see synergy.conf(5),\n"
		"LendIdleCores). Read-only; needs to read LendStateDir (root).\n"
		"  -s, --status     print the table (the only action)\n"
		"  -c, --conf FILE  synergy.conf to read (default $SYNERGY_CONF, else beside\n"
		"                   $SLURM_CONF, else %s)\n"
		"  -h, --help       this text\n", SYN_CONF_DEFAULT_PATH);
}

static int print_job(const syn__lend_info_t *i, void *arg)
{
	(void)arg;
	printf("  %-10u %-10s %-10s %-10s %-10s %s\n", (unsigned)i->jobid,
	       i->recorded ? i->allotted : "-", i->held[0] ? i->held : "-",
	       i->child[0] ? i->child : "-", i->lent[0] ? i->lent : "-",
	       i->recorded ? (i->borrow ? i->key : "(does not borrow)") : "(not recorded)");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "status", no_argument, NULL, 's' },
		{ "conf", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf_path = NULL;
	char conf_buf[4096];
	syn__conf_t conf;
	char err[300], cpus[256];
	struct dirent *d;
	DIR *dir;
	int c, status = 0, nodes = 0, rv = 1;

	while ((c = getopt_long(argc, argv, "sc:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			status = 1;
			break;
		case 'c':
			conf_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!status || optind < argc) {
		fprintf(stderr, "synergy-lend: %s\n", optind < argc ?
			"unexpected argument" : "nothing to do: give --status");
		usage(stderr);
		return 2;
	}
	if (!conf_path)
		conf_path = syn_conf_default_path(conf_buf, sizeof(conf_buf));
	syn__conf_defaults(&conf);
	if (syn__conf_load(&conf, conf_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "synergy-lend: %s\n", err);
		return 1;
	}
	printf("lending %s (LendIdleCores in %s), records in %s\n", conf.lend_idle ? "on" : "off",
	       conf_path, conf.lend_state_dir);
	dir = opendir("/sys/fs/cgroup/cpuset");
	if (!dir) {
		fprintf(stderr, "synergy-lend: /sys/fs/cgroup/cpuset: %s (cgroup v1 cpuset needed)\n",
			strerror(errno));
		return 1;
	}
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "slurm_", 6) != 0 || !syn__key_valid(d->d_name))
			continue;
		if (syn__cg_get_cpus(d->d_name, cpus, sizeof(cpus)) < 0)
			continue; /* removed meanwhile */
		nodes++;
		printf("node %s: cpus %s\n", d->d_name + 6, cpus);
		printf("  %-10s %-10s %-10s %-10s %-10s %s\n", "JOB", "ALLOTTED", "HOLDS", "SYNERGY",
		       "LENT", "PROFILE");
		if (syn__lend_status(conf.lend_state_dir, d->d_name, cpus, sizeof(cpus), print_job,
				     NULL) < 0 && errno != ENOENT) {
			fprintf(stderr, "synergy-lend: %s: %s\n", d->d_name, strerror(errno));
			goto out;
		}
	}
	if (!nodes)
		printf("no Slurm node cgroup on this machine (no job has run yet)\n");
	rv = 0;
out:
	closedir(dir);
	return rv;
}
