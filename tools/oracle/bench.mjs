// Times llama.cpp (node-llama-cpp's prebuilt CPU build) on a GGUF file the
// way `strata bench` times Strata: a prefill of P random tokens in one batch,
// then G greedy decode steps of one token, from an empty context, repeated R
// times. Prints one JSON object with the median tokens/s and the samples.
//
//   node bench.mjs MODEL.gguf THREADS P G R
//
// node-llama-cpp does not expose llama.cpp's poll setting, so its threads
// busy-wait between ops; on few cores compare at 1 thread.
import process from "node:process";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [model, threadsArg, pArg, gArg, rArg] = process.argv.slice(2);
const threads = Number(threadsArg ?? 1), P = Number(pArg ?? 512), G = Number(gArg ?? 64), R = Number(rArg ?? 3);
if (!model || !(threads > 0) || !(P > 0) || !(G >= 0) || !(R > 0)) {
    process.stderr.write("usage: node bench.mjs MODEL.gguf THREADS PROMPT_TOKENS GEN_TOKENS REPS\n");
    process.exit(2);
}

function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const llama = await getLlama({gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
    progressLogs: false, logLevel: LlamaLogLevel.error, maxThreads: threads});
const m = await llama.loadModel({modelPath: model});
const ctxSize = Math.ceil((P + G + 1) / 256) * 256;
const context = await m.createContext({contextSize: ctxSize, batchSize: Math.max(P, 512), sequences: 1,
    flashAttention: false, threads});
const seq = context.getSequence();
const vocab = m.tokens.ranges?.size ?? m.fileInsights?.vocabularySize ?? 1000;
const pre = [], dec = [];
let seed = 12345;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
for (let r = 0; r < R; r++) {
    await seq.clearHistory();
    const toks = Array.from({length: P}, () => Math.floor(rnd() * Math.min(vocab, 1000)));
    let t0 = performance.now();
    const first = await seq.controlledEvaluate(toks.map((t, i) => i === P - 1 ? [t, {generateNext: {token: true}}] : t));
    pre.push(P / ((performance.now() - t0) / 1000));
    let next = first[P - 1]?.next?.token ?? 0;
    t0 = performance.now();
    for (let i = 0; i < G; i++) {
        const out = await seq.controlledEvaluate([[next, {generateNext: {token: true}}]]);
        next = out[0]?.next?.token ?? 0;
    }
    dec.push(G / ((performance.now() - t0) / 1000));
}
process.stdout.write(JSON.stringify({model, threads, prompt_tokens: P, gen_tokens: G,
    prefill_tokens_per_second: median(pre), decode_tokens_per_second: median(dec),
    prefill_samples: pre, decode_samples: dec}) + "\n");
await context.dispose();
await m.dispose();
await llama.dispose();
