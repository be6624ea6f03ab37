// The feeds benchmark's client, a separate process (forked with an IPC channel) so that the
// requests do not share the server's event loop. For each batch it sends the GET requests in
// order, one at a time over one keep-alive connection, and answers the latency of each.
import http from 'node:http';

interface Batch {
  base: string;
  requests: { label: string; path: string; token?: string }[];
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function get(base: URL, path: string, token?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: 'GET',
        path: `${base.pathname}${path}`,
        headers: token ? { authorization: `Bearer ${token}` } : {},
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    request.on('error', reject);
    request.end();
  });
}

process.on('message', (batch: Batch) => {
  void (async () => {
    const base = new URL(batch.base);
    const latencies: { label: string; ms: number }[] = [];
    for (const { label, path, token } of batch.requests) {
      const started = performance.now();
      const response = await get(base, path, token);
      const ms = performance.now() - started;
      if (response.status !== 200) {
        process.send?.({ failure: `${label} ${path} answered ${response.status}: ${response.text.slice(0, 300)}` });
        return;
      }
      latencies.push({ label, ms });
    }
    process.send?.({ latencies });
  })();
});
process.on('disconnect', () => {
  agent.destroy();
  process.exit(0);
});
