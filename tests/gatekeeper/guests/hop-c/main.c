// The hop-c gatekeeper: the smallest gatekeeper that reaches a service, for BenchmarkFetch.
// Its session API has one method, whoami(), which GETs the session's notebook's whoami through
// the host and returns {"status", "body"}. It replaces the main.c of `atelier new gatekeeper
// --lang c` (the rest of the project is the template's), so that the gatekeeper hop can be
// measured with a guest whose own work is a few string operations, next to the Go probe's.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atelier_gatekeeper.h"
#include "json.h"

// sessions maps each open session to the whoami URL of its notebook.
static struct session {
  uint64_t id;
  char *url;
} *sessions;
static size_t session_count;
static uint64_t next_session;

void connector_describe(struct connector_vendor *v) {
  *v = (struct connector_vendor){"hop-c", "https://hop.invalid", "benchmark", "The gatekeeper hop, measured."};
}

size_t connector_resource_kinds(const struct connector_resource_kind **kinds) {
  static const struct connector_resource_kind notebook = {"notebook", "Notebook", "A notebook."};
  *kinds = &notebook;
  return 1;
}

int connector_describe_resource(const char *url, struct connector_resource *r, char **err) {
  (void)err;
  *r = (struct connector_resource){strdup(url), strdup(url), strdup(""), strdup("hop")};
  return 0;
}

const char *connector_typescript_types(void) {
  return "interface Hop { whoami(): Promise<{status: number, body: string}> }\n";
}

// connector_open_session turns ORIGIN/notebooks/NAME into ORIGIN/api/notebooks/NAME/whoami.
int connector_open_session(const char *url, const char *caller, uint64_t *id, char **err) {
  (void)caller;
  const char *at = strstr(url, "/notebooks/");
  if (at == NULL) {
    *err = atelier_format("%s is not a notebook URL", url);
    return -1;
  }
  struct session *grown = realloc(sessions, (session_count + 1) * sizeof *grown);
  if (grown == NULL) abort();
  sessions = grown;
  *id = ++next_session;
  sessions[session_count++] = (struct session){*id, atelier_format("%.*s/api%s/whoami", (int)(at - url), url, at)};
  return 0;
}

void connector_close_session(uint64_t id) {
  for (size_t i = 0; i < session_count; i++) {
    if (sessions[i].id == id) {
      free(sessions[i].url);
      sessions[i] = sessions[--session_count];
      return;
    }
  }
}

int connector_invoke(uint64_t id, const char *method, const char *args, char **out, char **err) {
  (void)args;
  const char *url = NULL;
  for (size_t i = 0; i < session_count; i++) {
    if (sessions[i].id == id) url = sessions[i].url;
  }
  if (url == NULL || strcmp(method, "whoami") != 0) {
    *err = atelier_format("no session %llu or no method %s (whoami())", (unsigned long long)id, method);
    return -1;
  }
  struct atelier_response resp;
  if (atelier_fetch("GET", url, NULL, 0, NULL, 0, &resp, err) != 0) return -1;
  char *body = json_quote(resp.body);
  *out = atelier_format("{\"status\":%u,\"body\":%s}", resp.status, body);
  free(body);
  atelier_response_free(&resp);
  return 0;
}

int connector_apply_action(uint64_t id, const char *payload, char **out, char **err) {
  (void)id;
  (void)payload;
  (void)out;
  *err = strdup("hop-c submits no actions");
  return -1;
}

void connector_reject_action(uint64_t id, const char *payload) {
  (void)id;
  (void)payload;
}

int connector_revert_action(uint64_t id, const char *payload, char **out, char **err) {
  (void)id;
  (void)payload;
  (void)out;
  *err = strdup("hop-c submits no actions");
  return -1;
}
