// Strata's llama.cpp oracle.
//
// Reads one JSON request on stdin and prints one JSON result on stdout:
//
//   request:  {"model": "/path/file.gguf", "threads": 2, "ops": [op, ...]}
//         or  {"threads": 2, "jobs": [{"model": "...", "ops": [op, ...]}, ...]}
//   ops:      {"op": "tokenize", "texts": ["..."], "addSpecial": false, "parseSpecial": true}
//             {"op": "eval", "tokens": [1, 2, 3], "topK": 10}
//             {"op": "greedy", "tokens": [1, 2, 3], "n": 16}
//   result:   {"results": [r, ...]} with one r per op, in order:
//             tokenize -> {"tokens": [[...], ...]}            (one id list per text)
//             eval     -> {"vocab": N, "probs": [[{"id", "p"}, ...], ...]}
//                         probs[i] is the top-K of the next-token distribution after
//                         tokens[0..i]: a softmax over the raw logits of the whole
//                         vocabulary (N entries), sorted by p descending.
//             greedy   -> {"tokens": [...]}                  (n argmax ids after the input)
//
//   or, for jobs: {"jobs": [{"results": [r, ...]} | {"error": "..."}, ...]}
//
// A job whose model llama.cpp refuses (or whose ops fail) gets an error with
// llama.cpp's log lines; the other jobs still run. Any other failure (and a
// failed single-model request) prints the reason on stderr and exits with
// status 1.
//
// llama.cpp runs on the CPU only, from the prebuilt binaries shipped in
// @node-llama-cpp/linux-x64 (or the platform's package): never built from
// source, never downloaded. Starting llama.cpp costs about a second and each
// model is loaded once per job, so batch ops and models into one request.
//
// Probabilities: LlamaContextSequence.controlledEvaluate with
// generateNext.probabilities and the default sampler options (temperature 0)
// runs llama.cpp's greedy sampler only, which selects the argmax without
// changing the candidates; node-llama-cpp then sorts all n_vocab candidates by
// logit and normalises exp(logit - max) over all of them (AddonContext.cpp,
// SampleToken). No top-k, top-p, min-p or temperature is applied.

import process from "node:process";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

async function readStdin() {
    const chunks = [];
    for await (const chunk of process.stdin)
        chunks.push(chunk);
    return Buffer.concat(chunks).toString("utf8");
}

function checkTokens(name, tokens) {
    if (!Array.isArray(tokens) || tokens.length === 0)
        throw new Error(`${name}: tokens must be a non-empty array of token ids`);
    for (const t of tokens)
        if (!Number.isInteger(t) || t < 0)
            throw new Error(`${name}: bad token id ${JSON.stringify(t)}`);
}

function validate(req) {
    if (req == null || typeof req !== "object")
        throw new Error("job must be a JSON object");
    if (typeof req.model !== "string" || req.model === "")
        throw new Error("request.model must be a file path");
    if (!Array.isArray(req.ops) || req.ops.length === 0)
        throw new Error("request.ops must be a non-empty array");
    req.ops.forEach((op, i) => {
        const name = `ops[${i}] (${op?.op})`;
        switch (op?.op) {
            case "tokenize":
                if (!Array.isArray(op.texts) || op.texts.some((t) => typeof t !== "string"))
                    throw new Error(`${name}: texts must be an array of strings`);
                break;
            case "eval":
                checkTokens(name, op.tokens);
                if (!Number.isInteger(op.topK) || op.topK < 1)
                    throw new Error(`${name}: topK must be a positive integer`);
                break;
            case "greedy":
                checkTokens(name, op.tokens);
                if (!Number.isInteger(op.n) || op.n < 1)
                    throw new Error(`${name}: n must be a positive integer`);
                break;
            default:
                throw new Error(`${name}: unknown op`);
        }
    });
}

function tokenize(model, op) {
    const tokens = model.tokens;
    // node-llama-cpp's tokenize never adds BOS/EOS (common_tokenize with
    // add_special=false); add them the way llama_vocab::tokenize does for
    // add_special=true, from the file's add_bos_token / add_eos_token.
    const bos = op.addSpecial && tokens.bos != null && model._model.shouldPrependBosToken();
    const eos = op.addSpecial && tokens.eos != null && model._model.shouldAppendEosToken();
    return {
        tokens: op.texts.map((text) => {
            const ids = Array.from(model.tokenize(text, !!op.parseSpecial));
            if (bos)
                ids.unshift(tokens.bos);
            if (eos)
                ids.push(tokens.eos);
            return ids;
        })
    };
}

async function evaluate(seq, op) {
    await seq.clearHistory();
    const out = await seq.controlledEvaluate(
        op.tokens.map((t) => [t, {generateNext: {probabilities: true}}])
    );
    let vocab = 0;
    const probs = op.tokens.map((_, i) => {
        const probabilities = out[i]?.next?.probabilities;
        if (probabilities == null)
            throw new Error(`eval: llama.cpp returned no probabilities for position ${i}`);
        if (vocab !== 0 && probabilities.size !== vocab)
            throw new Error(`eval: position ${i} has ${probabilities.size} candidates, earlier ones ${vocab}`);
        vocab = probabilities.size;
        const top = [];
        for (const [id, p] of probabilities) {
            if (top.length >= op.topK)
                break;
            top.push({id, p});
        }
        return top;
    });
    return {vocab, probs};
}

async function greedy(seq, op) {
    await seq.clearHistory();
    const ids = [];
    let input = op.tokens;
    while (ids.length < op.n) {
        const out = await seq.controlledEvaluate(
            input.map((t, i) => i === input.length - 1 ? [t, {generateNext: {token: true}}] : t)
        );
        const next = out[input.length - 1]?.next?.token;
        if (next == null)
            throw new Error(`greedy: llama.cpp sampled no token at step ${ids.length}`);
        ids.push(next);
        input = [next];
    }
    return {tokens: ids};
}

// runJob loads one model and performs its ops. Errors (including llama.cpp
// refusing the file) are returned with the llama.cpp log lines of the job.
async function runJob(llama, job, threads, logs) {
    logs.length = 0;
    let model = null;
    try {
        model = await llama.loadModel({modelPath: job.model, gpuLayers: 0, useMmap: true});
        let need = 1;
        for (const op of job.ops) {
            if (op.op === "eval")
                need = Math.max(need, op.tokens.length);
            else if (op.op === "greedy")
                need = Math.max(need, op.tokens.length + op.n);
        }
        let seq = null;
        const results = [];
        for (const op of job.ops) {
            if (op.op === "tokenize") {
                results.push(tokenize(model, op));
                continue;
            }
            if (seq == null) {
                const contextSize = Math.ceil(need / 256) * 256;
                const context = await model.createContext({
                    contextSize,
                    batchSize: contextSize,
                    sequences: 1,
                    flashAttention: false,
                    threads: threads === 0 ? undefined : threads
                });
                seq = context.getSequence();
            }
            results.push(op.op === "eval" ? await evaluate(seq, op) : await greedy(seq, op));
        }
        return {results};
    } catch (err) {
        const log = logs.join("").trim();
        return {error: (err?.message ?? String(err)) + (log === "" ? "" : `; llama.cpp log: ${log}`)};
    } finally {
        if (model != null)
            await model.dispose();
    }
}

async function main() {
    const req = JSON.parse(await readStdin());
    if (req == null || typeof req !== "object")
        throw new Error("request must be a JSON object");
    const single = req.jobs == null;
    const jobs = single ? [{model: req.model, ops: req.ops}] : req.jobs;
    if (!Array.isArray(jobs) || jobs.length === 0)
        throw new Error("request.jobs must be a non-empty array");
    jobs.forEach((job, i) => {
        try {
            validate(job);
        } catch (err) {
            throw new Error(`jobs[${i}]: ${err.message}`);
        }
    });
    const threads = Number.isInteger(req.threads) && req.threads > 0 ? req.threads : 0;

    const logs = [];
    const llama = await getLlama({
        gpu: false,
        build: "never",
        usePrebuiltBinaries: true,
        skipDownload: true,
        progressLogs: false,
        logLevel: LlamaLogLevel.error,
        logger: (level, message) => {
            logs.push(message);
            if (logs.length > 50)
                logs.shift();
        },
        maxThreads: threads
    });
    if (llama.gpu !== false)
        throw new Error(`llama.cpp loaded with GPU ${llama.gpu}, want the CPU`);

    const out = [];
    for (const job of jobs)
        out.push(await runJob(llama, job, threads, logs));
    await llama.dispose();
    if (single) {
        if (out[0].error != null)
            throw new Error(out[0].error);
        process.stdout.write(JSON.stringify({results: out[0].results}) + "\n");
    } else
        process.stdout.write(JSON.stringify({jobs: out}) + "\n");
}

main().catch((err) => {
    process.stderr.write(`oracle: ${err?.message ?? err}\n`);
    process.exit(1);
});
