#!/usr/bin/env node
// ort_run.mjs: runs an ONNX model on ONNX Runtime (CPU, onnxruntime-node) for perceive's
// reference fixtures and peer benchmarks.
//
//   node ort_run.mjs MODEL.onnx IN.npz OUT.npz [--threads N] [--opt LEVEL]
//       feeds every graph input by name from IN.npz, writes every output by name to OUT.npz.
//   node ort_run.mjs MODEL.onnx IN.npz [OUT.npz] --bench N --json F [--threads N] [--opt LEVEL]
//       one warm-up run, then N timed runs; writes {p50_ms, p99_ms, iters, threads,
//       ort_version, ...} to F (and the last run's outputs to OUT.npz when given).
//   node ort_run.mjs --batch LIST [--threads N] [--opt LEVEL]
//       LIST has one 'MODEL<TAB>IN<TAB>OUT' per line; runs each as above in this one process
//       (saves node's start-up per fixture) and prints 'ok MODEL' or 'fail MODEL<TAB>reason'.
//
// Sessions: intra-op threads N (default 1 for runs, all CPUs for --bench), inter-op 1,
// sequential execution. Graph optimizations: 'basic' for reference runs (semantics-preserving
// folding only, so the expected values come from ORT's plain operator kernels), 'all' for
// --bench; --opt disabled|basic|extended|all overrides.
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import { readNpz, writeNpz } from './npz.mjs';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');

function usage(msg) {
    if (msg) process.stderr.write(`ort_run: ${msg}\n`);
    process.stderr.write(
        'usage: ort_run.mjs MODEL.onnx IN.npz OUT.npz [--threads N] [--opt LEVEL]\n' +
        '       ort_run.mjs MODEL.onnx IN.npz [OUT.npz] --bench N --json F [--threads N]\n');
    process.exit(2);
}

function parseArgs(argv) {
    const a = { pos: [], threads: null, bench: 0, json: null, opt: null, batch: null };
    for (let i = 0; i < argv.length; i++) {
        const s = argv[i];
        const val = () => {
            if (i + 1 >= argv.length) usage(`${s} needs a value`);
            return argv[++i];
        };
        if (s === '--threads') a.threads = Number(val());
        else if (s === '--bench') a.bench = Number(val());
        else if (s === '--json') a.json = val();
        else if (s === '--opt') a.opt = val();
        else if (s === '--batch') a.batch = val();
        else if (s.startsWith('--')) usage(`unknown option ${s}`);
        else a.pos.push(s);
    }
    if (a.threads !== null && !(Number.isInteger(a.threads) && a.threads >= 1))
        usage('--threads must be a positive integer');
    if (a.bench && !(Number.isInteger(a.bench) && a.bench >= 1))
        usage('--bench must be a positive integer');
    if (a.batch) {
        if (a.pos.length || a.bench) usage('--batch takes no other files and no --bench');
    } else if (a.bench ? a.pos.length < 2 || a.pos.length > 3 || !a.json : a.pos.length !== 3) {
        usage();
    }
    if (a.opt && !['disabled', 'basic', 'extended', 'all'].includes(a.opt))
        usage(`bad --opt ${a.opt}`);
    return a;
}

// Nearest-rank percentile of a sorted array.
function percentile(sorted, q) {
    const k = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
    return sorted[k];
}

// Runs one model: feeds IN.npz, optionally benchmarks, writes outputs to outPath if given.
async function runOne(a, modelPath, inPath, outPath) {
    const threads = a.threads ?? (a.bench ? availableParallelism() : 1);
    const session = await ort.InferenceSession.create(modelPath, {
        executionProviders: ['cpu'],
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: a.opt ?? (a.bench ? 'all' : 'basic'),
    });
    try {
        const inputs = readNpz(inPath);
        const feeds = {};
        for (const name of session.inputNames) {
            const arr = inputs.get(name);
            if (!arr) throw new Error(`${inPath} has no array for graph input '${name}'`);
            feeds[name] = new ort.Tensor(arr.dtype, arr.data, arr.shape);
        }

        let results = await session.run(feeds);
        if (a.bench) {
            const times = [];
            for (let i = 0; i < a.bench; i++) {
                const t0 = process.hrtime.bigint();
                results = await session.run(feeds);
                times.push(Number(process.hrtime.bigint() - t0) / 1e6);
            }
            const sorted = [...times].sort((x, y) => x - y);
            const report = {
                p50_ms: percentile(sorted, 0.5),
                p99_ms: percentile(sorted, 0.99),
                mean_ms: times.reduce((s, v) => s + v, 0) / times.length,
                min_ms: sorted[0],
                iters: a.bench,
                threads,
                ort_version: ort.env.versions.node ?? ort.env.versions.common,
                model: modelPath,
            };
            writeFileSync(a.json, JSON.stringify(report, null, 2) + '\n');
        }

        if (outPath) {
            const outs = session.outputNames.map((name) => {
                const t = results[name];
                return [name, { dtype: t.type, shape: t.dims.map(Number), data: t.data }];
            });
            writeNpz(outPath, outs);
        }
    } finally {
        await session.release();
    }
}

async function main() {
    const a = parseArgs(process.argv.slice(2));
    if (!a.batch) {
        await runOne(a, ...a.pos);
        return;
    }
    const lines = readFileSync(a.batch, 'utf8').split('\n').filter((l) => l.trim().length);
    let failed = 0;
    for (const line of lines) {
        const [m, i, o] = line.split('\t');
        try {
            await runOne(a, m, i, o);
            process.stdout.write(`ok ${m}\n`);
        } catch (e) {
            failed++;
            const msg = String(e.message ?? e).replace(/\s+/g, ' ');
            process.stdout.write(`fail ${m}\t${msg}\n`);
        }
    }
    if (failed) process.stderr.write(`ort_run: ${failed} of ${lines.length} models failed\n`);
}

main().catch((e) => {
    process.stderr.write(`ort_run: ${e.message ?? e}\n`);
    process.exit(1);
});
