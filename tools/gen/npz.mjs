// npz.mjs: a small .npy / .npz reader and writer for the reference tools.
//
// Reads what numpy's savez / savez_compressed write (stored or deflated zip entries, zip64
// extras included) and writes plain stored entries with correct CRC-32s and no zip64, so the
// files are easy for any zip reader. Arrays are {dtype, shape, data} where dtype is the ONNX
// Runtime name ('float32', 'float16', 'int64', ...) and data a typed array (float16 travels
// as raw Uint16Array bits, bool as Uint8Array 0/1).
import { inflateRawSync } from 'node:zlib';
import { readFileSync, writeFileSync } from 'node:fs';

// numpy descr (little-endian or byte-order-free) <-> ORT dtype name and typed array.
const DTYPES = [
    { descr: ['<f4'], name: 'float32', Arr: Float32Array },
    { descr: ['<f2'], name: 'float16', Arr: Uint16Array },
    { descr: ['<i8'], name: 'int64', Arr: BigInt64Array },
    { descr: ['<i4'], name: 'int32', Arr: Int32Array },
    { descr: ['|i1', '<i1'], name: 'int8', Arr: Int8Array },
    { descr: ['|u1', '<u1'], name: 'uint8', Arr: Uint8Array },
    { descr: ['|b1', '<b1'], name: 'bool', Arr: Uint8Array },
    { descr: ['<f8'], name: 'float64', Arr: Float64Array },
];

function dtypeByDescr(descr) {
    const d = DTYPES.find((t) => t.descr.includes(descr));
    if (!d) throw new Error(`npy: unsupported dtype descr '${descr}'`);
    return d;
}

function dtypeByName(name) {
    const d = DTYPES.find((t) => t.name === name);
    if (!d) throw new Error(`npy: unsupported dtype '${name}'`);
    return d;
}

// ---- CRC-32 (IEEE, reflected, as zip uses) ----
const CRC_TABLE = (() => {
    const t = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
        let c = n;
        for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
        t[n] = c >>> 0;
    }
    return t;
})();

export function crc32(bytes) {
    let c = 0xffffffff;
    for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
}

// ---- .npy ----
export function parseNpy(buf) {
    const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    if (b.length < 10 || b[0] !== 0x93 || b.toString('latin1', 1, 6) !== 'NUMPY')
        throw new Error('npy: bad magic');
    const major = b[6];
    let hlen, hstart;
    if (major === 1) { hlen = b.readUInt16LE(8); hstart = 10; }
    else if (major === 2 || major === 3) { hlen = b.readUInt32LE(8); hstart = 12; }
    else throw new Error(`npy: unsupported version ${major}`);
    const header = b.toString('latin1', hstart, hstart + hlen);
    const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
    const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
    const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
    if (!descr || !fortran || !shape) throw new Error(`npy: bad header ${header}`);
    if (fortran[1] === 'True') throw new Error('npy: fortran_order arrays are not supported');
    const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
    const d = dtypeByDescr(descr[1]);
    const count = dims.reduce((a, v) => a * v, 1);
    const off = hstart + hlen;
    const nbytes = count * d.Arr.BYTES_PER_ELEMENT;
    if (b.length < off + nbytes) throw new Error('npy: truncated data');
    // Copy into a fresh, aligned buffer: typed arrays need aligned offsets.
    const raw = new Uint8Array(nbytes);
    raw.set(b.subarray(off, off + nbytes));
    return { dtype: d.name, shape: dims, data: new d.Arr(raw.buffer, 0, count) };
}

export function encodeNpy(arr) {
    const d = dtypeByName(arr.dtype);
    const descr = d.descr[0];
    const shape = arr.shape.length === 1 ? `(${arr.shape[0]},)` : `(${arr.shape.join(', ')})`;
    let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
    // Pad with spaces so that magic + version + length + header is a multiple of 64.
    const total = 10 + header.length + 1;
    header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
    const count = arr.shape.reduce((a, v) => a * v, 1);
    const bytes = new Uint8Array(arr.data.buffer, arr.data.byteOffset, arr.data.byteLength);
    if (bytes.length !== count * d.Arr.BYTES_PER_ELEMENT)
        throw new Error(`npy: data length ${bytes.length} does not match shape [${arr.shape}]`);
    const out = Buffer.alloc(10 + header.length + bytes.length);
    out[0] = 0x93;
    out.write('NUMPY', 1, 'latin1');
    out[6] = 1;
    out[7] = 0;
    out.writeUInt16LE(header.length, 8);
    out.write(header, 10, 'latin1');
    out.set(bytes, 10 + header.length);
    return out;
}

// ---- .npz (zip) ----
function readZip64Extra(extra, need) {
    // need: which of usize/csize/offset were 0xFFFFFFFF in the fixed header, in zip order.
    let p = 0;
    while (p + 4 <= extra.length) {
        const id = extra.readUInt16LE(p);
        const len = extra.readUInt16LE(p + 2);
        if (id === 0x0001) {
            const vals = {};
            let q = p + 4;
            for (const key of need) {
                vals[key] = Number(extra.readBigUInt64LE(q));
                q += 8;
            }
            return vals;
        }
        p += 4 + len;
    }
    return {};
}

export function readNpz(path) {
    const z = readFileSync(path);
    // End of central directory: scan back over a possible comment.
    let eocd = -1;
    for (let i = z.length - 22; i >= Math.max(0, z.length - 22 - 65535); i--) {
        if (z.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
    }
    if (eocd < 0) throw new Error(`npz: ${path}: not a zip file`);
    let count = z.readUInt16LE(eocd + 10);
    let cdOff = z.readUInt32LE(eocd + 16);
    if (eocd >= 20 && z.readUInt32LE(eocd - 20) === 0x07064b50) {
        const z64 = Number(z.readBigUInt64LE(eocd - 20 + 8));
        if (z.readUInt32LE(z64) !== 0x06064b50) throw new Error(`npz: ${path}: bad zip64 record`);
        count = Number(z.readBigUInt64LE(z64 + 32));
        cdOff = Number(z.readBigUInt64LE(z64 + 48));
    }
    const arrays = new Map();
    let p = cdOff;
    for (let e = 0; e < count; e++) {
        if (z.readUInt32LE(p) !== 0x02014b50)
            throw new Error(`npz: ${path}: bad central directory`);
        const method = z.readUInt16LE(p + 10);
        const crc = z.readUInt32LE(p + 16);
        let csize = z.readUInt32LE(p + 20);
        let usize = z.readUInt32LE(p + 24);
        const nlen = z.readUInt16LE(p + 28);
        const xlen = z.readUInt16LE(p + 30);
        const clen = z.readUInt16LE(p + 32);
        let loff = z.readUInt32LE(p + 42);
        const name = z.toString('utf8', p + 46, p + 46 + nlen);
        const need = [];
        if (usize === 0xffffffff) need.push('usize');
        if (csize === 0xffffffff) need.push('csize');
        if (loff === 0xffffffff) need.push('loff');
        if (need.length) {
            const v = readZip64Extra(z.subarray(p + 46 + nlen, p + 46 + nlen + xlen), need);
            usize = v.usize ?? usize;
            csize = v.csize ?? csize;
            loff = v.loff ?? loff;
        }
        p += 46 + nlen + xlen + clen;

        if (z.readUInt32LE(loff) !== 0x04034b50) throw new Error(`npz: ${path}: bad local header`);
        const dstart = loff + 30 + z.readUInt16LE(loff + 26) + z.readUInt16LE(loff + 28);
        const comp = z.subarray(dstart, dstart + csize);
        let data;
        if (method === 0) data = comp;
        else if (method === 8) data = inflateRawSync(comp);
        else throw new Error(`npz: ${path}: ${name}: unsupported compression method ${method}`);
        if (data.length !== usize || crc32(data) !== crc)
            throw new Error(`npz: ${path}: ${name}: size or CRC mismatch`);
        if (!name.endsWith('.npy')) continue;
        arrays.set(name.slice(0, -4), parseNpy(data));
    }
    return arrays;
}

// Writes arrays (a Map or an array of [name, arr] pairs, in that order) as stored entries.
export function writeNpz(path, arrays) {
    const parts = [];
    const central = [];
    let off = 0;
    let n = 0;
    for (const [name, arr] of arrays) {
        const data = encodeNpy(arr);
        const fname = Buffer.from(`${name}.npy`, 'utf8');
        const crc = crc32(data);
        if (data.length >= 0xffffffff || off >= 0xffffffff) throw new Error('npz: entry too large');
        const lh = Buffer.alloc(30);
        lh.writeUInt32LE(0x04034b50, 0);
        lh.writeUInt16LE(20, 4);          // version needed: 2.0
        lh.writeUInt16LE(0, 6);           // flags
        lh.writeUInt16LE(0, 8);           // method: stored
        lh.writeUInt16LE(0, 10);          // time
        lh.writeUInt16LE(0x21, 12);       // date: 1980-01-01
        lh.writeUInt32LE(crc, 14);
        lh.writeUInt32LE(data.length, 18);
        lh.writeUInt32LE(data.length, 22);
        lh.writeUInt16LE(fname.length, 26);
        lh.writeUInt16LE(0, 28);
        const ch = Buffer.alloc(46);
        ch.writeUInt32LE(0x02014b50, 0);
        ch.writeUInt16LE(20, 4);          // made by
        ch.writeUInt16LE(20, 6);
        ch.writeUInt16LE(0, 8);
        ch.writeUInt16LE(0, 10);
        ch.writeUInt16LE(0, 12);
        ch.writeUInt16LE(0x21, 14);
        ch.writeUInt32LE(crc, 16);
        ch.writeUInt32LE(data.length, 20);
        ch.writeUInt32LE(data.length, 24);
        ch.writeUInt16LE(fname.length, 28);
        ch.writeUInt32LE(off, 42);
        parts.push(lh, fname, data);
        central.push(ch, fname);
        off += lh.length + fname.length + data.length;
        n++;
    }
    const cd = Buffer.concat(central);
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(n, 8);
    end.writeUInt16LE(n, 10);
    end.writeUInt32LE(cd.length, 12);
    end.writeUInt32LE(off, 16);
    writeFileSync(path, Buffer.concat([...parts, cd, end]));
}
