/* meteor probe: what the loaded file says about the open points of specs/meteor.md section 7
 * (read from ops, constants and weight shapes, never from initializer names), as a cJSON object
 * for `perceive info meteor` / GET /info. Each point reports what the file has and whether that
 * is the spec's expectation ("expected": true) or the alternative. Prefix pvm_meteor_. */
#ifndef PVM_METEOR_PROBE_H
#define PVM_METEOR_PROBE_H

struct pvg_graph;
/* A cJSON object (caller deletes), NULL when out of memory. */
void *pvm_meteor_probe(const struct pvg_graph *g);

#endif
