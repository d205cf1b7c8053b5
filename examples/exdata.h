/* Small helpers the examples share for the plain ZooKeeper data they keep
 * (tickets, accounts, a config): not part of the library. */
#ifndef ZKR_EXAMPLES_EXDATA_H
#define ZKR_EXAMPLES_EXDATA_H
#include <zookeeper/zookeeper.h>

/* Sleep ms milliseconds. */
void ex_sleep_ms(int ms);

/* A plain handle connected to hosts (waits up to 15 s); NULL, after a
 * message naming prog, if it could not connect. */
zhandle_t *ex_data_connect(const char *prog, const char *hosts);

/* Delete path and everything under it; ZOK if it was not there. */
int ex_delete_tree(zhandle_t *zh, const char *path);

/* Create path holding data (parents made as plain nodes, existing ones
 * kept); returns the ZooKeeper code of creating path itself (ZNODEEXISTS
 * if it was already there). */
int ex_create_path(zhandle_t *zh, const char *path, const char *data);

#endif
