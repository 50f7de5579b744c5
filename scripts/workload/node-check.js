// node-check.js OUTFILE: exercises what Node.js programs commonly use inside a container — fs,
// child_process, worker_threads, loopback HTTP/TCP/UDP/unix sockets, the libuv thread pool — and
// writes one JSON line per check to OUTFILE: {"name", "result": "pass"|"fail"|"skip", "detail"}.
// Used by scripts/workload/report.py (run once under rloxsc, once under runc).
'use strict';
const fs = require('fs');
const fsp = require('fs/promises');
const os = require('os');
const path = require('path');
const cp = require('child_process');
const http = require('http');
const net = require('net');
const dgram = require('dgram');
const dns = require('dns');
const crypto = require('crypto');
const zlib = require('zlib');
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

if (!isMainThread) {
  // worker: either sum a range, or wait on a shared counter
  if (workerData.kind === 'sum') {
    let s = 0;
    for (let i = workerData.from; i < workerData.to; i++) s += i % 7;
    parentPort.postMessage(s);
  } else if (workerData.kind === 'atomics') {
    const a = new Int32Array(workerData.sab);
    Atomics.add(a, 1, 1);
    Atomics.wait(a, 0, 0, 5000);
    parentPort.postMessage(Atomics.load(a, 0));
  } else if (workerData.kind === 'spin') {
    for (;;) {}
  }
  return;
}

if (process.argv[2] === '--child') {
  process.on('message', (m) => { process.send({ echo: m, pid: process.pid }); process.exit(0); });
  return;
}

const OUT = process.argv[2] || '/dev/stdout';
const results = [];
const checks = [];
function check(name, fn) { checks.push([name, fn]); }
class Skip extends Error {}

function withTimeout(p, ms, what) {
  let t;
  return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: timed out after ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(t));
}
function assert(c, msg) { if (!c) throw new Error(msg || 'assertion failed'); }
function listen(server, ...args) {
  return new Promise((res, rej) => { server.once('error', rej); server.listen(...args, () => res(server.address())); });
}
function get(url, agent) {
  return new Promise((res, rej) => {
    http.get(url, { agent }, (r) => { let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => res([r.statusCode, b])); }).on('error', rej);
  });
}

let tmp;

check('fs: mkdtemp, write, append, read, stat, rename, readdir, unlink', async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'node-check-'));
  const f = path.join(tmp, 'a.txt');
  fs.writeFileSync(f, 'hello');
  fs.appendFileSync(f, ' world');
  assert(fs.readFileSync(f, 'utf8') === 'hello world');
  assert(fs.statSync(f).size === 11);
  fs.renameSync(f, path.join(tmp, 'b.txt'));
  assert(fs.readdirSync(tmp).join() === 'b.txt');
  fs.unlinkSync(path.join(tmp, 'b.txt'));
});

check('fs/promises: open, write, fsync, truncate, copyFile, symlink, readlink, chmod, utimes', async () => {
  const f = path.join(tmp, 'p.bin');
  const h = await fsp.open(f, 'w+');
  await h.write(crypto.randomBytes(65536));
  await h.sync();
  await h.truncate(1000);
  await h.close();
  await fsp.copyFile(f, f + '.copy');
  assert((await fsp.stat(f + '.copy')).size === 1000);
  await fsp.symlink(f, f + '.link');
  assert((await fsp.readlink(f + '.link')) === f);
  await fsp.chmod(f, 0o600);
  await fsp.utimes(f, 1000, 2000);
  assert((await fsp.stat(f)).mtimeMs === 2000000);
  await fsp.rm(tmp + '/p.bin.copy');
});

check('fs: streams (pipeline through gzip and back)', async () => {
  const { pipeline } = require('stream/promises');
  const src = path.join(tmp, 's.txt');
  fs.writeFileSync(src, 'x'.repeat(1 << 20));
  await pipeline(fs.createReadStream(src), zlib.createGzip(), fs.createWriteStream(src + '.gz'));
  await pipeline(fs.createReadStream(src + '.gz'), zlib.createGunzip(), fs.createWriteStream(src + '.out'));
  assert(fs.statSync(src + '.out').size === 1 << 20);
});

check('fs.watch (inotify) sees a new file', async () => {
  const d = fs.mkdtempSync(path.join(tmp, 'w-'));
  const seen = new Promise((res) => {
    const w = fs.watch(d, (ev, name) => { if (name === 'new') { w.close(); res(); } });
  });
  setTimeout(() => fs.writeFileSync(path.join(d, 'new'), '1'), 50);
  await withTimeout(seen, 5000, 'watch event');
});

check('child_process: execFileSync, execSync (shell), spawnSync', async () => {
  assert(cp.execFileSync('/bin/echo', ['hi']).toString() === 'hi\n');
  assert(cp.execSync('echo $((6*7))').toString().trim() === '42');
  const r = cp.spawnSync('/bin/sh', ['-c', 'echo out; echo err >&2; exit 3']);
  assert(r.status === 3 && r.stdout.toString() === 'out\n' && r.stderr.toString() === 'err\n');
});

check('child_process: spawn with pipes both ways', async () => {
  const c = cp.spawn('cat');
  let out = '';
  c.stdout.on('data', (d) => (out += d));
  c.stdin.end('piped through cat');
  const code = await new Promise((res) => c.on('close', res));
  assert(code === 0 && out === 'piped through cat', `code ${code} out ${out}`);
});

check('child_process: fork with IPC round trip', async () => {
  const c = cp.fork(__filename, ['--child'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const msg = await withTimeout(new Promise((res, rej) => { c.on('message', res); c.on('error', rej); c.send({ n: 1 }); }), 10000, 'ipc');
  assert(msg.echo.n === 1 && msg.pid > 0);
  await new Promise((res) => c.on('exit', res));
});

check('child_process: timeout kills the child (SIGTERM), kill() with SIGKILL', async () => {
  const r = cp.spawnSync('sleep', ['10'], { timeout: 200 });
  assert(r.signal === 'SIGTERM', `signal ${r.signal}`);
  const c = cp.spawn('sleep', ['10']);
  setTimeout(() => c.kill('SIGKILL'), 50);
  const [code, sig] = await new Promise((res) => c.on('exit', (a, b) => res([a, b])));
  assert(sig === 'SIGKILL', `exit ${code} ${sig}`);
});

check('child_process: 50 concurrent short-lived children', async () => {
  const runs = [];
  for (let i = 0; i < 50; i++) {
    runs.push(new Promise((res, rej) => cp.execFile('/bin/sh', ['-c', `echo ${i}`], (e, so) => (e ? rej(e) : res(so.trim())))));
  }
  const outs = await Promise.all(runs);
  assert(outs.every((o, i) => o === String(i)));
});

check('worker_threads: 4 workers compute and post results', async () => {
  const n = 4, per = 2_000_000;
  const parts = await Promise.all([...Array(n).keys()].map((i) => new Promise((res, rej) => {
    const w = new Worker(__filename, { workerData: { kind: 'sum', from: i * per, to: (i + 1) * per } });
    w.on('message', res); w.on('error', rej);
  })));
  let want = 0;
  for (let i = 0; i < n * per; i++) want += i % 7;
  assert(parts.reduce((a, b) => a + b, 0) === want);
});

check('worker_threads: SharedArrayBuffer + Atomics.wait/notify', async () => {
  const sab = new SharedArrayBuffer(8);
  const a = new Int32Array(sab);
  const w = new Worker(__filename, { workerData: { kind: 'atomics', sab } });
  const got = new Promise((res, rej) => { w.on('message', res); w.on('error', rej); });
  while (Atomics.load(a, 1) === 0) await new Promise((r) => setTimeout(r, 5));
  Atomics.store(a, 0, 7);
  Atomics.notify(a, 0);
  assert((await withTimeout(got, 10000, 'atomics')) === 7);
});

check('worker_threads: terminate() stops a spinning worker', async () => {
  const w = new Worker(__filename, { workerData: { kind: 'spin' } });
  await new Promise((r) => w.on('online', r));
  const code = await withTimeout(w.terminate(), 10000, 'terminate');
  assert(code === 1, `exit code ${code}`);
});

check('http: loopback server on 127.0.0.1, 20 keep-alive requests and a POST', async () => {
  const server = http.createServer((req, res) => {
    let b = '';
    req.on('data', (d) => (b += d));
    req.on('end', () => res.end(req.method === 'POST' ? b.toUpperCase() : `hello ${req.url}`));
  });
  const { port } = await listen(server, 0, '127.0.0.1');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const rs = await Promise.all([...Array(20).keys()].map((i) => get(`http://127.0.0.1:${port}/${i}`, agent)));
  assert(rs.every(([s, b], i) => s === 200 && b === `hello /${i}`));
  const posted = await new Promise((res, rej) => {
    const rq = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent }, (r) => { let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => res(b)); });
    rq.on('error', rej); rq.end('payload');
  });
  assert(posted === 'PAYLOAD');
  agent.destroy();
  await new Promise((r) => server.close(r));
});

check('http: loopback server on [::1]', async () => {
  const server = http.createServer((req, res) => res.end('v6'));
  try {
    await listen(server, 0, '::1');
  } catch (e) {
    if (e.code === 'EADDRNOTAVAIL' || e.code === 'EAFNOSUPPORT') throw new Skip(`no IPv6 loopback: ${e.code}`);
    throw e;
  }
  const [s, b] = await get(`http://[::1]:${server.address().port}/`);
  assert(s === 200 && b === 'v6');
  await new Promise((r) => server.close(r));
});

check('net: TCP echo, UDP round trip, unix socket on loopback', async () => {
  const srv = net.createServer((c) => c.pipe(c));
  const { port } = await listen(srv, 0, '127.0.0.1');
  const echoed = await new Promise((res, rej) => {
    const c = net.connect(port, '127.0.0.1', () => c.end('ping'));
    let b = ''; c.on('data', (d) => (b += d)); c.on('end', () => res(b)); c.on('error', rej);
  });
  assert(echoed === 'ping');
  srv.close();
  const u = dgram.createSocket('udp4');
  await new Promise((r) => u.bind(0, '127.0.0.1', r));
  const got = new Promise((res) => u.once('message', (m) => res(m.toString())));
  u.send('dgram', u.address().port, '127.0.0.1');
  assert((await withTimeout(got, 5000, 'udp')) === 'dgram');
  u.close();
  const sock = path.join(tmp, 'u.sock');
  const us = net.createServer((c) => c.end('unix'));
  await listen(us, sock);
  const ub = await new Promise((res, rej) => { const c = net.connect(sock); let b = ''; c.on('data', (d) => (b += d)); c.on('end', () => res(b)); c.on('error', rej); });
  assert(ub === 'unix');
  us.close();
});

check('dns.lookup("localhost")', async () => {
  const r = await withTimeout(dns.promises.lookup('localhost'), 10000, 'lookup');
  assert(r.address === '127.0.0.1' || r.address === '::1', JSON.stringify(r));
});

check('libuv thread pool: pbkdf2, scrypt, randomBytes, gzip', async () => {
  const util = require('util');
  const k = await util.promisify(crypto.pbkdf2)('pw', 'salt', 10000, 32, 'sha256');
  assert(k.length === 32);
  const s = await util.promisify(crypto.scrypt)('pw', 'salt', 32);
  assert(s.length === 32);
  const rb = await util.promisify(crypto.randomBytes)(1024);
  const z = await util.promisify(zlib.gzip)(rb);
  assert(Buffer.compare(await util.promisify(zlib.gunzip)(z), rb) === 0);
});

check('os: cpus, memory, network interfaces (loopback only), uptime', async () => {
  assert(os.cpus().length >= 1);
  assert(os.totalmem() > 0 && os.freemem() > 0);
  const ifs = Object.keys(os.networkInterfaces());
  assert(ifs.every((i) => i === 'lo'), `interfaces: ${ifs}`);
  assert(os.uptime() > 0);
});

check('timers and high-resolution clock', async () => {
  const t0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, 100));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  assert(ms >= 95 && ms < 5000, `${ms} ms`);
});

(async () => {
  for (const [name, fn] of checks) {
    let result = 'pass', detail = '';
    try {
      await withTimeout(Promise.resolve().then(fn), 60000, name);
    } catch (e) {
      if (e instanceof Skip) { result = 'skip'; detail = e.message; } else { result = 'fail'; detail = `${e.code ? e.code + ': ' : ''}${e.message}`; }
    }
    results.push({ name, result, detail });
    console.log(`${result.toUpperCase().padEnd(4)} ${name}${detail ? ' -- ' + detail : ''}`);
  }
  fs.writeFileSync(OUT, results.map((r) => JSON.stringify(r)).join('\n') + '\n');
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(results.some((r) => r.result === 'fail') ? 1 : 0);
})();
