#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (CPU) as a second reference.
//
//   node run-ort.js MODEL.onnx OUTDIR IN0.npy [IN1.npy ...]
//
// onnxruntime-node is loaded from $ORT_NODE_DIR/node_modules/onnxruntime-node
// (see install.sh).  Inputs are bound to the graph inputs in order; outputs are
// written as OUTDIR/out0.npy, out1.npy, ... in graph-output order.
// Exit codes: 0 ok, 1 ORT error, 2 usage, 3 onnxruntime-node unavailable.
'use strict';
const fs = require('fs');
const path = require('path');

// ---- minimal .npy (v1/v2/v3 read, v1.0 write), little-endian, C order ----
// descr (without byte-order char) -> [ORT type, TypedArray ctor]
const TYPES = {
  f4: ['float32', Float32Array], f2: ['float16', Uint16Array],
  f8: ['float64', Float64Array], i1: ['int8', Int8Array],
  u1: ['uint8', Uint8Array], i2: ['int16', Int16Array],
  u2: ['uint16', Uint16Array], i4: ['int32', Int32Array],
  u4: ['uint32', Uint32Array], i8: ['int64', BigInt64Array],
  u8: ['uint64', BigUint64Array], b1: ['bool', Uint8Array],
};
const DESCR_OF = {};
for (const [k, [t]] of Object.entries(TYPES))
  DESCR_OF[t] = (k[1] === '1' ? '|' : '<') + k;

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf[0] !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY')
    throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  let hlen, hoff;
  if (major === 1) { hlen = buf.readUInt16LE(8); hoff = 10; }
  else if (major === 2 || major === 3) { hlen = buf.readUInt32LE(8); hoff = 12; }
  else throw new Error(`${file}: unsupported .npy version ${major}`);
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', hoff, hoff + hlen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(`${file}: bad header ${header}`);
  if (fortran[1] === 'True') throw new Error(`${file}: fortran_order arrays unsupported`);
  let d = descr[1];
  const order = d[0];
  if ('<>|='.includes(order)) d = d.slice(1);
  if (order === '>' && d[1] !== '1') throw new Error(`${file}: big-endian unsupported`);
  if (d === '?') d = 'b1';
  if (d === 'b') d = 'i1';
  if (d === 'B') d = 'u1';
  const ty = TYPES[d];
  if (!ty) throw new Error(`${file}: unsupported dtype '${descr[1]}'`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  const start = hoff + hlen;
  const bytes = n * ty[1].BYTES_PER_ELEMENT;
  if (buf.length - start < bytes) throw new Error(`${file}: truncated data`);
  // Copy into a fresh, aligned ArrayBuffer.
  const ab = new ArrayBuffer(bytes);
  new Uint8Array(ab).set(buf.subarray(start, start + bytes));
  return { type: ty[0], dims, data: new ty[1](ab) };
}

function writeNpy(file, type, dims, data) {
  const descr = DESCR_OF[type];
  if (!descr) throw new Error(`cannot write ORT type '${type}' to .npy`);
  const shp = dims.length === 0 ? '()' : dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shp}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre[0] = 0x93; pre.write('NUMPY', 1, 'latin1'); pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let body;
  if (type === 'bool') body = Buffer.from(Uint8Array.from(data, v => (v ? 1 : 0)));
  else body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// ---- main ----
async function main() {
  const args = process.argv.slice(2);
  if (args.length < 2) {
    console.error('usage: run-ort.js MODEL.onnx OUTDIR [IN0.npy ...]  (env ORT_NODE_DIR)');
    process.exit(2);
  }
  const [model, outdir, ...inputs] = args;
  const dir = process.env.ORT_NODE_DIR;
  let ort;
  try {
    ort = require(dir ? path.resolve(dir, 'node_modules', 'onnxruntime-node') : 'onnxruntime-node');
  } catch (e) {
    console.error(`run-ort.js: onnxruntime-node unavailable (ORT_NODE_DIR=${dir || ''}): ${e.message}`);
    process.exit(3);
  }
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'disabled', // a reference: keep ORT's fusions out of it
    intraOpNumThreads: 1,
  });
  if (inputs.length !== session.inputNames.length)
    throw new Error(`model has ${session.inputNames.length} inputs (${session.inputNames.join(', ')}), got ${inputs.length} .npy files`);
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const a = readNpy(inputs[i]);
    feeds[name] = new ort.Tensor(a.type, a.type === 'bool' ? Uint8Array.from(a.data, v => (v ? 1 : 0)) : a.data, a.dims);
  });
  const results = await session.run(feeds);
  fs.mkdirSync(outdir, { recursive: true });
  session.outputNames.forEach((name, i) => {
    const t = results[name];
    let data = t.data;
    // float16 may come back as Float16Array where the runtime has one; store raw bits.
    if (t.type === 'float16' && !(data instanceof Uint16Array))
      data = new Uint16Array(data.buffer, data.byteOffset, data.length);
    writeNpy(path.join(outdir, `out${i}.npy`), t.type, Array.from(t.dims, Number), data);
  });
  if (session.release) await session.release();
}

main().catch(e => {
  console.error(`run-ort.js: error: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
