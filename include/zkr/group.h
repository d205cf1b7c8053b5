/* zkr_group_t: membership of a group (Curator's GroupMember): this
 * process's member node, kept while it is a member (a zkr_pnode_t), and
 * the group's members as they come and go (a zkr_cache_t of the
 * membership path's children).
 *
 *   zkr_group_t *g;
 *   zkr_group_new(&g, c, "/groups/workers", "worker-7", "10.0.0.7", 8, NULL);
 *   zkr_group_set_listener(g, on_member, NULL);
 *   zkr_group_start(g);
 *   zkr_group_wait_initialized(g, 10000);
 *   zkr_group_members(g, &members, &count);
 *   ...
 *   zkr_group_free(g);   (leaves: its node deleted)
 *
 * Rules (beyond <zkr/common.h>'s):
 *  - Wire format (Curator's): a member is the node <membership path>/<id>,
 *    EPHEMERAL, no protected name, its data the member's payload as is;
 *    missing parents are made as containers; the members are the direct
 *    children of the membership path, each id the child's name.  C and
 *    Curator members share a group.
 *  - Our node follows zkr_pnode_t's rules: made again when deleted or its
 *    session lost; another session's node with our id is never deleted nor
 *    overwritten (we wait for it to go).
 *  - A member id is one path segment: not empty, not "." or "..", no '/',
 *    and the whole path one ZooKeeper accepts.
 *  - The listener runs on the client's callback thread; the members come
 *    from the cache, from any thread, each call one consistent copy. */
#ifndef ZKR_GROUP_H
#define ZKR_GROUP_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkr_group zkr_group_t;

/* One member.  In an event it is valid during the call; in the array of
 * zkr_group_members it is the caller's (zkr_group_members_free). */
typedef struct zkr_group_member {
    const char *id;
    const char *payload; /* payload_len bytes, then a NUL byte (not counted) */
    size_t payload_len;
} zkr_group_member_t;

typedef enum zkr_group_event_type {
    ZKR_GROUP_JOINED = 1,     /* member: a member joined (also each one
                                 found by the first load) */
    ZKR_GROUP_CHANGED = 2,    /* member: its new payload */
    ZKR_GROUP_LEFT = 3,       /* member: as it was last known */
    ZKR_GROUP_INITIALIZED = 4 /* the members known equal the server's:
                                 after the first load, and after each full
                                 reload (a lost session) */
} zkr_group_event_type_t;

typedef struct zkr_group_event {
    zkr_group_event_type_t type;
    const zkr_group_member_t *member; /* JOINED, CHANGED, LEFT; else NULL */
} zkr_group_event_t;

/* Told each event on the client's callback thread, in order, its group
 * first.  It may call the library (the group's too), but not
 * zkr_group_free on its own group. */
typedef void (*zkr_group_fn)(zkr_group_t *group, const zkr_group_event_t *event, void *ctx);

typedef struct zkr_group_options {
    size_t size; /* set by zkr_group_options_init (no other option yet:
                    the struct keeps later ones compatible) */
} zkr_group_options_t;

/* Fill opt with the defaults (a macro passing the program's struct size).
 * NULL is ignored. */
ZKR_EXTERN void zkr_group_options_init_size(zkr_group_options_t *opt, size_t size);
#define zkr_group_options_init(opt) zkr_group_options_init_size((opt), sizeof(zkr_group_options_t))

/* A member `member_id` of the group at membership_path, with payload_len
 * bytes of payload (copied; NULL with 0: an empty payload); opt NULL: the
 * defaults.  Nothing is sent until zkr_group_start.  Returns ZKR_OK,
 * ZKR_EINVAL (out, c NULL; a membership path ZooKeeper would refuse, "/"
 * or under /zookeeper; a member id that is not one path segment (above);
 * payload_len over ZKR_DATA_MAX or payload NULL with payload_len > 0;
 * opt->size too small or too large), ZKR_ECLOSED, ZKR_ENOMEM,
 * ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_group_new(zkr_group_t **out, zkr_client_t *c, const char *membership_path, const char *member_id,
                             const void *payload, size_t payload_len, const zkr_group_options_t *opt);

/* The listener (NULL removes it), any time until freed: told the events
 * after the call.  Returns ZKR_OK, ZKR_EINVAL (group NULL). */
ZKR_EXTERN int zkr_group_set_listener(zkr_group_t *group, zkr_group_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_group_set_listener(group, fn, ctx)                                                                   \
    ZKR__CHECKED(fn, zkr_group_fn,                                                                              \
                 "a group listener is void fn(zkr_group_t *group, const zkr_group_event_t *event, void *ctx)", \
                 zkr_group_set_listener(group, fn, ctx))
#endif

/* Join (our node is made and kept) and read the members.  Returns ZKR_OK,
 * ZKR_EINVAL, ZKR_ESTATE (started before), ZKR_ECLOSED, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_group_start(zkr_group_t *group);

/* Wait until the first load of the members is done (its events are queued
 * for the listener, ZKR_GROUP_INITIALIZED last).  Returns ZKR_OK (at once
 * if done), ZKR_EINVAL, ZKR_ESTATE (not started), ZKR_ETIMEDOUT,
 * ZKR_ECLOSED (the client closed). */
ZKR_EXTERN int zkr_group_wait_initialized(zkr_group_t *group, int64_t timeout_ms);

/* 1 while our member node is known to be on the server, else 0 (also for
 * NULL). */
ZKR_EXTERN int zkr_group_is_member(zkr_group_t *group);

/* The members now, sorted by id (bytewise), as one consistent copy; this
 * member always among them (with the payload it keeps until its node is
 * seen).  *members is the caller's (zkr_group_members_free; NULL when
 * *count is 0).  Returns ZKR_OK, ZKR_EINVAL, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_group_members(zkr_group_t *group, zkr_group_member_t **members, size_t *count);
/* NULL is a no-op. */
ZKR_EXTERN void zkr_group_members_free(zkr_group_member_t *members, size_t count);

/* A new payload (copied), written to our node, waiting for the write
 * until the timeout.  Returns ZKR_OK (written, or not a member now: the
 * node will be made with it), ZKR_EINVAL (as zkr_group_new),
 * ZKR_ETIMEDOUT (not confirmed in time: written once the link allows),
 * ZKR_ECLOSED, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_group_set_payload(zkr_group_t *group, const void *payload, size_t payload_len,
                                     int64_t timeout_ms);

/* Leave and free: our node is deleted (only the one we made: as
 * zkr_pnode_free, waiting at most ZKR_RELEASE_WAIT_MS, the rest in the
 * background).  After it returns the listener is not running and will
 * not run again.  From the group's own listener: not allowed, logged,
 * nothing done.  NULL is a no-op. */
ZKR_EXTERN void zkr_group_free(zkr_group_t *group);

/* "JOINED", "CHANGED", "LEFT", "INITIALIZED"; "UNKNOWN" otherwise. */
ZKR_EXTERN const char *zkr_group_event_name(zkr_group_event_type_t type);

#ifdef __cplusplus
}
#endif
#endif
