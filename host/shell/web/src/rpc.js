// The shell's one connection to the server: a Cap'n Web session over the WebSocket at /api.
// It reconnects on its own (with backoff) and re-authenticates with the token kept in
// localStorage; listeners hear "change" whenever the state, the session or the user changes.
import { newWebSocketRpcSession } from "capnweb";

const TOKEN_KEY = "atelier.token";
const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 5000;

/** Connection states, as shown in the header. */
export const State = Object.freeze({
  CONNECTING: "connecting",
  ONLINE: "online",
  OFFLINE: "offline",
});

export class Connection extends EventTarget {
  /** @param {string} url the WebSocket URL of the API */
  constructor(url) {
    super();
    this.url = url;
    this.state = State.CONNECTING;
    this.root = null; // the public API of the current session
    this.api = null; // the authenticated API, when signed in
    this.user = null; // whoami() of the signed-in principal
    this.serverInfo = null;
    this.epoch = 0; // increases with every new session: stubs of an older one are dead
    this.lastError = "";
    this.backoff = MIN_BACKOFF_MS;
    this.socket = null;
    this.timer = 0;
  }

  /** Whether the signed-in principal is the server's admin (the user "admin", not an agent). */
  get admin() {
    return !!this.user && this.user.kind === "user" && this.user.username === "admin";
  }

  get token() {
    return localStorage.getItem(TOKEN_KEY);
  }

  /** Opens the first session. */
  start() {
    this.open();
  }

  open() {
    clearTimeout(this.timer);
    this.setState(State.CONNECTING);
    const socket = new WebSocket(this.url);
    this.socket = socket;
    const root = newWebSocketRpcSession(socket);
    socket.addEventListener("close", () => this.lost(socket, "the connection closed"));
    socket.addEventListener("open", () => this.opened(socket, root));
  }

  async opened(socket, root) {
    if (socket !== this.socket) return;
    try {
      const info = await root.serverInfo();
      let api = null;
      let user = null;
      const token = this.token;
      if (token) {
        try {
          api = root.authenticate(token);
          user = await api.whoami();
        } catch (err) {
          if (socket !== this.socket) return;
          if (err && err.code === "UNAUTHORIZED") {
            localStorage.removeItem(TOKEN_KEY); // expired or revoked: sign in again
            this.lastError = err.message;
            api = null;
            user = null;
          } else {
            throw err;
          }
        }
      }
      if (socket !== this.socket) return;
      this.backoff = MIN_BACKOFF_MS;
      this.root = root;
      this.serverInfo = info;
      this.api = api;
      this.user = user;
      this.epoch++;
      this.setState(State.ONLINE);
    } catch (err) {
      this.lastError = String((err && err.message) || err);
      socket.close();
    }
  }

  lost(socket, why) {
    if (socket !== this.socket) return;
    this.socket = null;
    this.root = null;
    this.api = null;
    this.lastError = why;
    this.setState(State.OFFLINE);
    this.timer = setTimeout(() => this.open(), this.backoff);
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
  }

  setState(state) {
    this.state = state;
    this.dispatchEvent(new Event("change"));
  }

  /** Signs in with a token from login() or signup(). */
  async useToken(token) {
    const api = this.root.authenticate(token);
    const user = await api.whoami();
    localStorage.setItem(TOKEN_KEY, token);
    this.api = api;
    this.user = user;
    this.dispatchEvent(new Event("change"));
  }

  async login(username, password) {
    await this.useToken(await this.root.login(username, password));
  }

  async signup(username, password) {
    await this.useToken(await this.root.signup(username, password));
  }

  async logout() {
    try {
      if (this.api) await this.api.logout();
    } finally {
      localStorage.removeItem(TOKEN_KEY);
      this.api = null;
      this.user = null;
      this.dispatchEvent(new Event("change"));
    }
  }
}
