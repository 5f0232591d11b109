import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  PROCESS_TEST_TIMEOUT_MS,
  preparedDataDir,
  registerOver,
  type ServiceProcess,
  startService,
} from '../helpers/service-process.js';
import { authedSocket, request, type TestSocket } from '../helpers/ws-client.js';

/**
 * The service as a process, stopped with SIGTERM while clients were sending on their sockets and
 * started again on the gateway port it had picked (WS_PORT=0 first, as tests and a quick local
 * run start it). The gateway closes the sockets first, so their ends linger in TIME_WAIT on its
 * port: uSockets binds a port it is given as 0 without SO_REUSEADDR, and those ends kept the next
 * process from binding it for up to a minute ("The gateway could not listen").
 */
describe('a restart on the gateway port the service had picked', () => {
  it(
    'listens on it at once while the sockets the service before it closed linger',
    async () => {
      const dataDir = await preparedDataDir('atrium-ws-restart-');
      const services: ServiceProcess[] = [];
      const sockets: TestSocket[] = [];
      try {
        const first = startService(dataDir);
        services.push(first);
        const { httpPort, wsPort } = await first.listening;
        const users = await Promise.all(
          Array.from({ length: 4 }, () => registerOver(`http://127.0.0.1:${httpPort}`)),
        );
        for (const user of users) {
          const socket = await authedSocket(`ws://127.0.0.1:${wsPort}/ws`, user.access_token);
          sockets.push(socket);
          expect(await request(socket, 'presence.heartbeat')).toMatchObject({ t: 'ack' });
          // Sending until the service closes the socket, as a game client does.
          const sending = setInterval(() => {
            if (socket.open) socket.sendFrame({ t: 'presence.heartbeat' });
          }, 20);
          void socket.closed.then(() => clearInterval(sending));
        }

        first.child.kill('SIGTERM');
        for (const socket of sockets) expect((await socket.closed).code).toBe(1001);
        expect(await first.exited).toBe(0);

        const second = startService(dataDir, { HTTP_PORT: String(httpPort), WS_PORT: String(wsPort) });
        services.push(second);
        expect((await second.listening).wsPort).toBe(wsPort);
        const again = await authedSocket(
          `ws://127.0.0.1:${wsPort}/ws`,
          (users[0] as { access_token: string }).access_token,
        );
        sockets.push(again);
        expect(await request(again, 'presence.heartbeat')).toMatchObject({ t: 'ack' });
      } finally {
        for (const socket of sockets) socket.close();
        for (const { child, exited } of services) {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
          await exited;
        }
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    PROCESS_TEST_TIMEOUT_MS * 2,
  );
});
