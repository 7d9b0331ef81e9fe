// Renders chat templates with llama.cpp's own Jinja engine (the native
// AddonJinjaRenderer of node-llama-cpp), for engine/chat's tests.
//
// stdin:  [{"template": "...", "vars": {...}}, ...]
// stdout: [{"ok": "rendered text"} | {"err": "message"}, ...]
//
// ORACLE_DIR is the tools/oracle folder holding node_modules.
import path from "node:path";
import process from "node:process";
import {pathToFileURL} from "node:url";

const dir = process.env.ORACLE_DIR;
if (!dir)
    throw new Error("ORACLE_DIR is not set");
const {getLlama, LlamaLogLevel} = await import(
    pathToFileURL(path.join(dir, "node_modules", "node-llama-cpp", "dist", "index.js")).href);

const chunks = [];
for await (const chunk of process.stdin)
    chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const llama = await getLlama({
    gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false,
    logLevel: LlamaLogLevel.error
});
const out = cases.map(({template, vars}) => {
    try {
        return {ok: new llama._bindings.AddonJinjaRenderer(template).render(vars)};
    } catch (err) {
        return {err: String(err)};
    }
});
process.stdout.write(JSON.stringify(out));
await llama.dispose();
