// Drives a running `strata serve` with the official OpenAI and Ollama
// JavaScript clients, as a local app would. Run by clients_test.go at the
// repository root: STRATA_URL is http://127.0.0.1:PORT, STRATA_TOKEN the
// API token. Prints "ok <check>" per check; any failure exits non-zero.
import assert from "node:assert/strict";
import OpenAI from "openai";
import {Ollama} from "ollama";

const base = process.env.STRATA_URL, token = process.env.STRATA_TOKEN;
if (!base || !token)
    throw new Error("STRATA_URL and STRATA_TOKEN must be set");
const ok = (name) => console.log(`ok ${name}`);

const weather = {
    type: "function",
    function: {
        name: "get_weather", description: "Weather in a city",
        parameters: {
            type: "object", required: ["city", "days"],
            properties: {city: {type: "string", maxLength: 12}, days: {type: "integer"}}
        }
    }
};
const schema = {
    type: "object", required: ["title", "count", "kind"], additionalProperties: false,
    properties: {title: {type: "string", maxLength: 10}, count: {type: "integer"}, kind: {enum: ["a", "b"]}}
};

// --- OpenAI (openai npm package) ---
const openai = new OpenAI({baseURL: `${base}/v1`, apiKey: token, maxRetries: 0});
{
    const r = await openai.chat.completions.create({model: "local", messages: [{role: "user", content: "Hi"}], max_tokens: 8, seed: 1});
    assert.equal(typeof r.choices[0].message.content, "string");
    assert.equal(r.usage.completion_tokens, 8);
    assert.equal(r.choices[0].finish_reason, "length");
    ok("openai chat");
}
{
    const stream = await openai.chat.completions.create({model: "local", messages: [{role: "user", content: "Hi"}],
        max_tokens: 6, stream: true, stream_options: {include_usage: true}});
    let text = "", usage = null, finish = null;
    for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        for (const c of chunk.choices) {
            text += c.delta?.content ?? "";
            if (c.finish_reason) finish = c.finish_reason;
        }
    }
    assert.equal(usage?.completion_tokens, 6);
    assert.equal(finish, "length");
    ok("openai chat stream with usage");
}
{
    const r = await openai.completions.create({model: "local", prompt: "Once upon a time", max_tokens: 5});
    assert.equal(typeof r.choices[0].text, "string");
    assert.equal(r.usage.completion_tokens, 5);
    ok("openai completions");
}
{
    const r = await openai.chat.completions.create({model: "local", messages: [{role: "user", content: "Weather in Paris?"}],
        tools: [weather], tool_choice: "required", max_tokens: 200, seed: 2});
    const msg = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, "tool_calls");
    assert.equal(msg.tool_calls.length, 1);
    const call = msg.tool_calls[0];
    assert.equal(call.function.name, "get_weather");
    const args = JSON.parse(call.function.arguments);
    assert.equal(typeof args.city, "string");
    assert.ok(Number.isInteger(args.days));
    const r2 = await openai.chat.completions.create({model: "local", max_tokens: 4, tools: [weather], messages: [
        {role: "user", content: "Weather in Paris?"}, msg,
        {role: "tool", tool_call_id: call.id, content: JSON.stringify({temp: 21})}]});
    assert.equal(typeof r2.choices[0].message.content, "string");
    ok("openai tools round trip");
}
{
    const runner = openai.chat.completions.stream({model: "local", messages: [{role: "user", content: "Weather?"}],
        tools: [weather], tool_choice: {type: "function", function: {name: "get_weather"}}, max_tokens: 200, seed: 4});
    const final = await runner.finalChatCompletion();
    const call = final.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, "get_weather");
    JSON.parse(call.function.arguments);
    ok("openai streamed tool call");
}
{
    for (let seed = 1; seed <= 5; seed++) {
        const r = await openai.chat.completions.create({model: "local", messages: [{role: "user", content: "JSON please"}],
            max_tokens: 300, seed, response_format: {type: "json_schema", json_schema: {name: "item", strict: true, schema}}});
        const v = JSON.parse(r.choices[0].message.content);
        assert.equal(typeof v.title, "string");
        assert.ok(Number.isInteger(v.count));
        assert.ok(["a", "b"].includes(v.kind));
        assert.deepEqual(Object.keys(v).sort(), ["count", "kind", "title"]);
    }
    ok("openai json_schema");
}
{
    const list = await openai.models.list();
    assert.ok(list.data.length >= 1);
    ok("openai models");
}
await assert.rejects(new OpenAI({baseURL: `${base}/v1`, apiKey: "0".repeat(64), maxRetries: 0})
    .chat.completions.create({model: "local", messages: [{role: "user", content: "x"}]}), (e) => e.status === 401);
ok("openai wrong token refused");

// --- Ollama (ollama npm package) ---
const ollama = new Ollama({host: base, headers: {Authorization: `Bearer ${token}`}});
{
    const r = await ollama.chat({model: "strata", messages: [{role: "user", content: "Hi"}], options: {num_predict: 7, seed: 1}});
    assert.equal(r.done, true);
    assert.equal(r.message.role, "assistant");
    assert.equal(r.eval_count, 7);
    ok("ollama chat");
}
{
    let parts = 0, last = null;
    for await (const part of await ollama.chat({model: "strata", messages: [{role: "user", content: "Hi"}], stream: true, options: {num_predict: 5}})) {
        parts++;
        last = part;
    }
    assert.ok(parts >= 2);
    assert.equal(last.done, true);
    assert.equal(last.eval_count, 5);
    ok("ollama chat stream");
}
{
    const r = await ollama.generate({model: "strata", prompt: "Once upon a time", options: {num_predict: 4}});
    assert.equal(typeof r.response, "string");
    assert.equal(r.eval_count, 4);
    ok("ollama generate");
}
{
    const r = await ollama.chat({model: "strata", messages: [{role: "user", content: "JSON"}], format: schema, options: {num_predict: 300, seed: 3}});
    const v = JSON.parse(r.message.content);
    assert.ok(["a", "b"].includes(v.kind));
    ok("ollama format schema");
}
{
    const r = await ollama.chat({model: "strata", tools: [weather], options: {num_predict: 4}, messages: [
        {role: "user", content: "Weather in Paris?"},
        {role: "assistant", content: "", tool_calls: [{function: {name: "get_weather", arguments: {city: "Paris", days: 1}}}]},
        {role: "tool", content: "{\"temp\": 21}", tool_name: "get_weather"}]});
    assert.equal(r.done, true);
    ok("ollama tool history");
}
{
    const ps = await ollama.ps();
    assert.equal(ps.models.length, 1);
    assert.ok(new Date(ps.models[0].expires_at).getTime() > Date.now());
    const tags = await ollama.list();
    assert.ok(tags.models.length >= 1);
    const show = await ollama.show({model: tags.models[0].name});
    assert.ok(show.model_info["general.architecture"]);
    ok("ollama ps, list, show");
}
