// Models: the language models chats can use, the user's own and the instance-wide ones. A
// model's key is sealed on the server and never shown again.
import { h, replace, form, field, select, attempt, toast } from "../dom.js";

export async function renderModels(el, ctx) {
  const { api, conn } = ctx;
  const models = await api.listModels();
  replace(
    el,
    h("h1", null, "Models"),
    h("p", { class: "muted" }, "Chats use these models: an OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter) or the Anthropic Messages API. Keys are sealed and never shown again."),
    models.length === 0
      ? h("p", { class: "muted", id: "no-models" }, "No models yet.")
      : h("table", { class: "list", id: "models" },
          h("thead", null, h("tr", null, ["Name", "Provider", "Endpoint", "Model", "Context", "Key", ""].map((t) => h("th", null, t)))),
          h("tbody", null,
            models.map((m) =>
              h("tr", { dataset: { model: m.id } },
                h("td", null, m.name, m.scope === "instance" ? h("span", { class: "role" }, " instance") : null),
                h("td", null, m.provider),
                h("td", { class: "mono url" }, m.baseUrl, m.refused ? h("div", { class: "notice error refused" }, m.refused) : null),
                h("td", { class: "mono" }, m.model),
                h("td", null, m.contextWindow ? String(m.contextWindow) : "default"),
                h("td", null, m.hasKey ? "sealed" : "none"),
                h("td", { class: "actions" },
                  m.scope === "instance" && !conn.admin
                    ? null
                    : h("button", { class: "small danger", text: "Remove", onclick: () => attempt(async () => {
                        await api.removeModel(m.id);
                        toast(`removed ${m.name}`);
                        ctx.refresh();
                      }) })))))),
    h("section", { class: "card" },
      h("h3", null, "Add a model"),
      form(
        { id: "add-model" },
        [
          field("Name", { name: "name", required: true, placeholder: "my llama" }),
          select("Provider", "provider", [["openai", "OpenAI-compatible (Chat Completions)"], ["anthropic", "Anthropic (Messages)"]]),
          field("Base URL (empty: the provider's own)", { name: "baseUrl", type: "url", placeholder: "http://127.0.0.1:11434/v1" }),
          field("Model", { name: "model", required: true, placeholder: "gpt-4o-mini" }),
          field("API key (optional)", { name: "apiKey", type: "password", autocomplete: "off" }),
          field("Context window in tokens (optional)", { name: "contextWindow", type: "number", min: 1024, step: 1 }),
          conn.admin ? h("label", { class: "check" }, h("input", { type: "checkbox", name: "instance", value: "1" }), "for every user of the server") : null,
        ],
        "Add model",
        async (v) => {
          const spec = { name: v.name, provider: v.provider, baseUrl: v.baseUrl, model: v.model, instance: v.instance === "1" };
          if (v.apiKey) spec.apiKey = v.apiKey;
          if (v.contextWindow) spec.contextWindow = Number(v.contextWindow);
          const info = await api.addModel(spec);
          toast(`added ${info.name}`);
          ctx.refresh();
        },
      )),
  );
}
