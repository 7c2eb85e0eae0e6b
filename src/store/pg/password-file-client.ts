/**
 * The pool's client: when neither the URL nor PGPASSWORD gives a password and the server asks for one, it is looked up
 * in ~/.pgpass (PGPASSFILE), as libpq does. node-postgres 8 still looks there itself, but then warns on stderr, in every
 * process (every nightly log), that pg 9 will stop; and without one it says only "client password must be a string".
 */
import pg from 'pg';
import pgPass from 'pgpass';

const fromPasswordFile = (params: unknown) =>
  new Promise<string>((resolve, reject) => {
    pgPass(params, (password) => {
      if (password !== undefined) resolve(password);
      else reject(new Error('the server asks for a password and none was given: put it in the URL, in ~/.pgpass (or the file PGPASSFILE names) or in PGPASSWORD'));
    });
  });

export class PasswordFileClient extends pg.Client {
  constructor(config?: pg.ClientConfig) {
    super(config);
    // Null or empty: none in the URL or PGPASSWORD. A function is asked only when the server asks for a password. The
    // pool does not end a client that failed to connect: without this, the socket would wait for the server's timeout.
    if (!this.password) {
      (this as { password?: unknown }).password = (params: unknown) =>
        fromPasswordFile(params).catch((err: unknown) => {
          setImmediate(() => this.connection.stream.destroy());
          throw err;
        });
    }
  }
}
