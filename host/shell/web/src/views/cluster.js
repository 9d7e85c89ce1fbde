// The cluster admin screen (admin only, cluster mode): the nodes with their state, workspaces
// and the last log entry each applied, the log's size and newest snapshot, which node runs each
// workspace; drain the node serving this session, compact the log. As `atelier cluster`.
import { h, replace, attempt, toast, when, kib } from "../dom.js";

export async function renderCluster(el, ctx) {
  const { api } = ctx;
  const st = await api.clusterStatus();
  const sync = st.syncAlways ? "always" : "every 2 min";
  replace(
    el,
    h("h1", null, "Cluster"),
    h(
      "p",
      { id: "cluster-self" },
      `This session is served by node ${st.self}: its replica applied entry ${st.applied} (lag ${st.log.lag}), ${st.peerSessions} peer sessions. `,
      `Replicas ${st.replicas}, sync ${sync}, lease TTL ${st.leaseTTL}.`,
    ),
    h(
      "p",
      { id: "cluster-log" },
      `Log: ${st.log.entries} entries, ${kib(st.log.bytes)}; `,
      st.log.snapshot > 0 ? `newest snapshot at entry ${st.log.snapshot}.` : "no snapshot yet.",
    ),
    (st.problems || []).map((p) => h("p", { class: "muted" }, `Incomplete (try again in a few seconds): ${p}`)),
    h("table", { class: "list", id: "cluster-nodes" },
      h("thead", null, h("tr", null, ["Node", "Address", "State", "Workspaces", "Applied", "Started", "Last seen"].map((t) => h("th", null, t)))),
      h("tbody", null,
        (st.nodes || []).map((n) =>
          h("tr", { dataset: { node: n.name } },
            h("td", { class: "mono" }, n.name, n.name === st.self ? " (this node)" : ""),
            h("td", { class: "mono" }, n.address || ""),
            h("td", null, n.draining ? "draining" : "serving"),
            h("td", null, n.leases),
            h("td", null, n.applied),
            h("td", null, when(n.started)),
            h("td", null, when(n.seen)))))),
    h("h2", null, "Workspaces"),
    Object.keys(st.workspaces || {}).length === 0
      ? h("p", { class: "muted" }, "No workspace is running.")
      : h("table", { class: "list", id: "cluster-workspaces" },
          h("thead", null, h("tr", null, h("th", null, "Workspace"), h("th", null, "Node"))),
          h("tbody", null,
            Object.keys(st.workspaces).sort().map((id) => h("tr", null, h("td", { class: "mono" }, id), h("td", { class: "mono" }, st.workspaces[id]))))),
    h("section", { class: "card" },
      h("h3", null, "Maintenance"),
      h("div", { class: "buttons" },
        h("button", {
          id: "cluster-compact",
          text: "Compact the log",
          onclick: () =>
            attempt(async () => {
              const done = await api.compactLog();
              toast(
                done.snapshot === 0
                  ? "nothing to do: the newest snapshot holds every entry applied"
                  : done.purgedBelow === 0
                    ? `snapshot at entry ${done.snapshot}; nothing purged yet`
                    : `snapshot at entry ${done.snapshot}; the log was purged below entry ${done.purgedBelow}`,
              );
              ctx.refresh();
            }),
        }),
        h("button", {
          id: "cluster-drain",
          class: "danger",
          text: `Drain node ${st.self}`,
          onclick: () => {
            if (confirm(`Move every workspace off node ${st.self}? Stop the node afterwards.`))
              attempt(async () => {
                await api.drainNode();
                toast(`drained ${st.self}: its workspaces start on other nodes at their next call`);
                ctx.refresh();
              });
          },
        })),
      h("p", { class: "hint" }, "Draining hands the workspaces of the node serving this page to the other nodes; its clients keep working through it.")),
  );
}
