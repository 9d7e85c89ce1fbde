// A greedy gadget UI: deployed as a gadget's client.js by TestGadgetUISubscriptionsEnd, it asks
// for one subscription more than the shell lets a UI hold (all at once), cancels the first it
// got and subscribes again, and writes what happened as JSON into #report. Its #reload button
// reloads the frame (the UI then runs again, as on every load).
const MAX = 64; // the shell's bound (host/shell/web/src/gadgetframe.js)

const tries = await Promise.allSettled(Array.from({ length: MAX + 1 }, () => gadget.subscribe(() => {})));
const held = tries.filter((t) => t.status === "fulfilled").map((t) => t.value);
const report = {
  held: held.length,
  refused: tries.filter((t) => t.status === "rejected").map((t) => String(t.reason && t.reason.message)),
};
try {
  await tries[0].value.cancel();
  await gadget.subscribe(() => {});
  report.again = "subscribed";
} catch (e) {
  report.again = `${(e && e.message) || e}`;
}

const pre = document.createElement("pre");
pre.id = "report";
pre.textContent = JSON.stringify(report);
const reload = document.createElement("button");
reload.id = "reload";
reload.textContent = "reload";
reload.addEventListener("click", () => location.reload());
document.body.append(pre, reload);
