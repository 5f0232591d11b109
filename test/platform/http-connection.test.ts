import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../helpers/app.js';

const UPLOAD_BYTES = 12 * 1024 * 1024;

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function parseResponse(text: string): RawResponse {
  const headEnd = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, headEnd).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(headEnd + 4) };
}

/**
 * Writes `head` and then `bodyBytes` zero bytes on a plain TCP connection and reads only once
 * everything is written, as a client that uploads first and reads afterwards does; resolves with
 * what the server sent before closing the connection.
 */
function sendThenRead(port: number, head: string, bodyBytes = 0): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.pause();
    socket.on('error', reject);
    socket.write(head);
    const chunk = Buffer.alloc(64 * 1024);
    let sent = 0;
    const pump = () => {
      while (sent < bodyBytes) {
        sent += chunk.length;
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
      const received: Buffer[] = [];
      socket.on('data', (data: Buffer) => received.push(data));
      socket.on('end', () => resolve(parseResponse(Buffer.concat(received).toString())));
      socket.resume();
    };
    pump();
  });
}

/** Uploads with node:http, which reads the response while it is still writing the body. */
function upload(url: string, chunked: boolean): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/auth/register`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(chunked ? {} : { 'content-length': UPLOAD_BYTES }),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          body += text;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    let sent = 0;
    const pump = () => {
      while (sent < UPLOAD_BYTES) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

function expectProblem(response: RawResponse, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(JSON.parse(response.body)).toMatchObject({
    status,
    code,
    type: `urn:atrium:problem:${code.toLowerCase()}`,
  });
}

/**
 * Answers the server gives over a real connection for requests it cannot read in full: they must
 * reach the client as problem+json even though the client is still sending.
 */
describe('HTTP answers on the connection', () => {
  const app = useTestApp();
  let port: number;

  beforeAll(async () => {
    port = Number(new URL(app().httpUrl).port);
  });

  it('delivers a 413 for a 12 MB body to a node:http client that is still uploading', async () => {
    for (let i = 0; i < 5; i++) {
      const response = await upload(app().httpUrl, false);
      expectProblem(response, 413, 'PAYLOAD_TOO_LARGE');
      expect(response.headers.connection).toBe('close');
    }
  });

  it('delivers a 413 for a 12 MB chunked body without a length, stopped part way', async () => {
    for (let i = 0; i < 3; i++) expectProblem(await upload(app().httpUrl, true), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('delivers a 413 to a client that sends the whole 12 MB before reading anything', async () => {
    const head =
      'POST /api/auth/register HTTP/1.1\r\nHost: atrium\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${UPLOAD_BYTES}\r\n\r\n`;
    for (let i = 0; i < 3; i++)
      expectProblem(await sendThenRead(port, head, UPLOAD_BYTES), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('keeps a connection it answered early open for the client, then closes it once the client goes quiet', async () => {
    const accepted = new Promise<Socket>((resolve) => app().http.server.once('connection', resolve));
    const client = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    client.on('error', () => {});
    const answered = new Promise<string>((resolve) =>
      client.once('data', (data: Buffer) => resolve(data.toString())),
    );
    client.write(
      'POST /api/auth/register HTTP/1.1\r\nHost: atrium\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${UPLOAD_BYTES}\r\n\r\n${' '.repeat(1024)}`,
    );
    const serverSide = await accepted;
    const closed = new Promise<void>((resolve) => serverSide.once('close', () => resolve()));
    expect(await answered).toMatch(/^HTTP\/1\.1 413 /);
    const answeredAt = Date.now();
    await closed;
    const lingered = Date.now() - answeredAt;
    expect(lingered).toBeGreaterThanOrEqual(1000);
    expect(lingered).toBeLessThan(6000);
    client.destroy();
  });

  it('answers header fields over the size limit with 431 HEADERS_TOO_LARGE and closes the connection', async () => {
    const head = `GET /api/users/me HTTP/1.1\r\nHost: atrium\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`;
    const response = await sendThenRead(port, head);
    expectProblem(response, 431, 'HEADERS_TOO_LARGE');
    expect(response.headers.connection).toBe('close');
    expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.body));
  });

  it('answers a URL over the size limit with 414 URI_TOO_LONG', async () => {
    const head = `GET /api/users/${'u'.repeat(20_000)} HTTP/1.1\r\nHost: atrium\r\n\r\n`;
    expectProblem(await sendThenRead(port, head), 414, 'URI_TOO_LONG');
  });

  it('answers bytes that are not an HTTP request with 400 MALFORMED_REQUEST', async () => {
    expectProblem(await sendThenRead(port, 'HELLO THERE\r\n\r\n'), 400, 'MALFORMED_REQUEST');
  });

  it('keeps serving new connections after answering broken ones', async () => {
    const response = await fetch(`${app().httpUrl}/healthz`);
    expect(response.status).toBe(200);
  });
});
