// A tiny downstream endpoint for the dev-mode walk-through: prints every request it receives
// and checks the HMAC signature of the example manifests. Usage: node examples/receiver.mjs [port]
import { createHmac } from 'node:crypto';
import http from 'node:http';

const port = Number(process.argv[2] ?? 9999);
const signingSecret = process.env.SIGNING_SECRET ?? 'change-me-signing-secret';

http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const sig = req.headers['x-webhook-signature'];
      const expected = createHmac('sha256', signingSecret).update(body).digest('base64');
      console.log(`\n${req.method} ${req.url}`);
      for (const [k, v] of Object.entries(req.headers)) if (k.startsWith('x-') || k === 'authorization') console.log(`  ${k}: ${v}`);
      if (sig) console.log(`  signature ${sig === expected ? 'valid' : 'INVALID'}`);
      console.log(`  body: ${body.toString('utf8').slice(0, 500)}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`receiver listening on http://127.0.0.1:${port}`));
