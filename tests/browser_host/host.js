// A browser MCP Apps host for tests/integration/test_apps_host.py, built on the real packages a
// web host uses: the TypeScript SDK's Client over streamable HTTP (which checks every tool
// answer against the tool's outputSchema with ajv) and ext-apps' AppBridge, which speaks the MCP
// Apps protocol (SEP-1865) with the view through a sandbox proxy on another origin. esbuild
// bundles this file for the browser at test time; the test drives it through window.vaultHost.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AppBridge, PostMessageTransport, RESOURCE_MIME_TYPE, getToolUiResourceUri }
  from "@modelcontextprotocol/ext-apps/app-bridge";
import Ajv from "ajv";

const APPS_EXTENSION = "io.modelcontextprotocol/ui";

// Every answer is checked once more, by an ajv of our own in strict mode, against the schema
// the tool was listed with, so that a schema ajv cannot compile fails here too.
const ajv = new Ajv({ strict: true, strictRequired: false, allErrors: true, validateFormats: false });
const validators = new Map();

function checked(name, tools, result) {
  const tool = tools.find((t) => t.name === name);
  if (!tool || !tool.outputSchema) return { name, schema: false };
  if (!validators.has(name)) validators.set(name, ajv.compile(tool.outputSchema));
  const validate = validators.get(name);
  const valid = validate(result.structuredContent);
  return { name, schema: true, valid, errors: valid ? null : ajv.errorsText(validate.errors),
           status: result.structuredContent && result.structuredContent.status, isError: !!result.isError };
}

class Host {
  constructor() {
    this.log = [];        // what the view asked of the host, in order
    this.sizes = [];      // ui/notifications/size-changed from the view
    this.answers = [];    // every tool answer's check against its output schema
    this.bridges = [];
  }

  async connect(url, token) {
    this.client = new Client({ name: "vault-mem browser host", version: "1" },
      { capabilities: { extensions: { [APPS_EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } } });
    const transport = new StreamableHTTPClientTransport(new URL(url),
      { requestInit: { headers: { Authorization: "Bearer " + token } } });
    await this.client.connect(transport);
    this.tools = (await this.client.listTools()).tools;
    return this.tools.map((t) => t.name);
  }

  // A tools/call through the SDK (its own ajv check throws on a mismatch) and through ours.
  async call(name, args) {
    const result = await this.client.callTool({ name, arguments: args });
    this.answers.push(checked(name, this.tools, result));
    return result;
  }

  // Render the view of `toolName` in a sandbox proxy frame from `sandboxUrl` (another origin).
  async render(toolName, sandboxUrl, hostContext) {
    const tool = this.tools.find((t) => t.name === toolName);
    const uri = getToolUiResourceUri(tool);
    const read = await this.client.readResource({ uri });
    const resource = read.contents[0];
    const csp = resource._meta && resource._meta.ui && resource._meta.ui.csp;
    const frame = document.createElement("iframe");
    frame.setAttribute("sandbox", "allow-scripts allow-same-origin");
    frame.style.width = "420px";
    frame.style.height = "120px";
    frame.dataset.view = String(this.bridges.length);
    const bridge = new AppBridge(null, { name: "vault-mem browser host", version: "1" },
      { serverTools: {}, serverResources: {}, logging: {} }, { hostContext });
    const index = this.bridges.length;
    const initialized = new Promise((resolve) => { bridge.oninitialized = () => resolve(); });
    bridge.onsandboxready = () => {
      bridge.sendSandboxResourceReady({ html: resource.text, csp, sandbox: "allow-scripts" });
    };
    bridge.onsizechange = ({ width, height }) => {
      this.sizes.push({ view: index, width, height });
      if (height != null) frame.style.height = height + "px";
    };
    bridge.oncalltool = async (params) => {
      this.log.push({ view: index, method: "tools/call", params });
      return this.call(params.name, params.arguments || {});
    };
    bridge.onreadresource = async (params) => {
      this.log.push({ view: index, method: "resources/read", params });
      return this.client.readResource(params);
    };
    bridge.onrequestdisplaymode = async (params) => {
      this.log.push({ view: index, method: "ui/request-display-mode", params });
      return { mode: hostContext.displayMode || "inline" };
    };
    bridge.onopenlink = async (params) => { this.log.push({ view: index, method: "ui/open-link", params }); return {}; };
    bridge.onmessage = async (params) => { this.log.push({ view: index, method: "ui/message", params }); return {}; };
    bridge.onloggingmessage = (params) => { this.log.push({ view: index, method: "notifications/message", params }); };
    frame.src = sandboxUrl;
    document.body.append(frame);
    await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
    this.bridges.push({ bridge, frame, initialized });
    await initialized;
    return {
      index,
      mimeType: resource.mimeType,
      uri: resource.uri,
      csp: csp || null,
      appCapabilities: bridge.getAppCapabilities(),
      appInfo: bridge.getAppVersion(),
    };
  }

  // The model's own call of the tool, as a host shows it in the view: tool-input, then the result.
  async modelCall(index, name, args, partial) {
    const { bridge } = this.bridges[index];
    if (partial) await bridge.sendToolInputPartial({ arguments: partial });
    await bridge.sendToolInput({ arguments: args });
    const result = await this.call(name, args);
    await bridge.sendToolResult(result);
    return result;
  }

  async cancel(index, args, reason) {
    const { bridge } = this.bridges[index];
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolCancelled({ reason });
  }

  async context(index, change) {
    await this.bridges[index].bridge.sendHostContextChange(change);
  }

  // ui/resource-teardown: the view must answer before the host removes its frame.
  async teardown(index, reason) {
    const { bridge, frame } = this.bridges[index];
    const answer = await bridge.teardownResource({ reason });
    await bridge.close();
    frame.remove();
    return answer;
  }
}

window.vaultHost = new Host();
