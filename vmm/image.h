/* --image: a podman image as the guest's root. Its config (`podman image
 * inspect`) becomes the run's command, environment, folder and user, as
 * `docker run` reads them; its merged layers (`podman image mount`) stay
 * mounted by a watcher process for exactly as long as fsvm lives. */
#ifndef FSVM_IMAGE_H
#define FSVM_IMAGE_H

#include <limits.h>
#include <stddef.h>

#include "vmm/cli.h"

#define IMAGE_MAX_ARGS 256 /* in an Entrypoint, and in a Cmd or CMD */

struct json_object;

/* What an image's config says; the strings point into json. */
struct image_config {
	struct json_object *json;
	const char *id;
	const char *user;    /* "": root */
	const char *workdir; /* "": / */
	const char *env[CLI_MAX_ENV];
	unsigned int nr_env;
	const char *entrypoint[IMAGE_MAX_ARGS];
	unsigned int nr_entrypoint;
	const char *cmd[IMAGE_MAX_ARGS];
	unsigned int nr_cmd;
};

/* `podman image inspect`'s output (a JSON array of one image) into *c.
 * Anything else is -EINVAL with one line in err. image_config_free after
 * success or failure. */
int image_config_parse(const char *text, size_t len, struct image_config *c,
		       char *err, size_t errlen);
void image_config_free(struct image_config *c);

/* The run in the image, into cfg (which holds the flags): the image's Env
 * under --env's, its WorkingDir (which must be a folder in root_fd, the
 * image's tree) unless --cwd, its User unless --user (names looked up in
 * the tree's etc/passwd and etc/group), then its Entrypoint (or
 * --entrypoint) followed by CMD, or without CMD its Cmd (none with
 * --entrypoint), in argv (2 * IMAGE_MAX_ARGS + 1 entries). Guest ids are
 * the same host ids, as under podman, unless the flags map them. -EINVAL
 * with one line in err. */
int image_config_apply(const struct image_config *c, int root_fd,
		       struct fsvm_config *cfg, char **argv, char *err,
		       size_t errlen);

struct image {
	struct image_config config;
	struct fsvm_config cfg; /* the run's, in the image */
	char *argv[2 * IMAGE_MAX_ARGS + 1];
	char root[PATH_MAX];    /* the merged layers, podman's mount */
	int release_fd;         /* closed: the watcher unmounts the image */
	int unmounted_fd;       /* at its end: it has */
};

/* Finds cfg->image in podman's store, has the watcher mount it and makes
 * img->cfg, cfg in the image. -1 after one line (a missing image: "no
 * image REF in podman's store; podman pull REF"); image_close after
 * success or failure. */
int image_open(const struct fsvm_config *cfg, struct image *img);

/* Has the watcher unmount the image, and returns once it has (fsvm may be
 * jailed and filtered by then: it only closes and reads a pipe). */
void image_close(struct image *img);

#endif
