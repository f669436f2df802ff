// TLS material for the client API (docs/contract.md §2 "cluster.config.json" `tls`) and the
// peer transport (`peer_tls`): read the PEM files (with `{node}` replaced by the node id),
// prove they form a usable context before the node starts (a bad file stops the start with
// one line naming it, never a handshake failure at 3 a.m.), and build the option objects
// node:https and undici take. Everything here can be called again on SIGHUP: the caller
// swaps the contexts in (server.setSecureContext, ReloadableConnector.set) without a
// restart, and keeps the old ones when the new files are bad.
import { readFileSync } from 'node:fs';
import type https from 'node:https';
import tls, { type TLSSocket } from 'node:tls';
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { buildConnector } from 'undici';
import { pathForNode, type PeerTlsConfig, type TlsConfig } from '../config.js';

export class TlsFileError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'TlsFileError';
  }
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  /** when the leaf certificate expires (ms since the epoch) */
  notAfterMs: number;
  subject: string;
}

/** TLS 1.2 is the floor: older versions have known downgrade attacks. */
const MIN_VERSION = 'TLSv1.2' as const;

function readPem(file: string, field: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new TlsFileError(`${field} ${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { cause: err });
  }
}

/** Reads and checks one block's files. `block` names it in messages ("tls", "peer_tls"). */
export function loadTlsMaterial(cfg: Pick<TlsConfig, 'certFile' | 'keyFile' | 'caFile'> | PeerTlsConfig, nodeId: string, block: string): TlsMaterial {
  const certFile = pathForNode(cfg.certFile, nodeId);
  const keyFile = pathForNode(cfg.keyFile, nodeId);
  const caFile = cfg.caFile !== undefined ? pathForNode(cfg.caFile, nodeId) : undefined;
  const cert = readPem(certFile, `${block}.cert_file`);
  const key = readPem(keyFile, `${block}.key_file`);
  const ca = caFile !== undefined ? readPem(caFile, `${block}.ca_file`) : undefined;
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new TlsFileError(`${block}.cert_file ${certFile}: not a PEM certificate (${(err as Error).message})`, { cause: err });
  }
  if (ca !== undefined) {
    try {
      new X509Certificate(ca);
    } catch (err) {
      throw new TlsFileError(`${block}.ca_file ${caFile}: not a PEM certificate (${(err as Error).message})`, { cause: err });
    }
  }
  if (!x509.checkPrivateKey(keyObject(key, keyFile, block))) throw new TlsFileError(`${block}: ${keyFile} is not the key of ${certFile}`);
  try {
    // fails on a bad key, or a key that does not belong to the certificate
    tls.createSecureContext({ cert, key, ...(ca ? { ca } : {}), minVersion: MIN_VERSION });
  } catch (err) {
    throw new TlsFileError(`${block}: ${certFile} / ${keyFile}: ${(err as Error).message}`, { cause: err });
  }
  return { cert, key, ...(ca ? { ca } : {}), notAfterMs: Date.parse(x509.validTo), subject: x509.subject.replace(/\n/g, ', ') };
}

function keyObject(key: Buffer, file: string, block: string): KeyObject {
  try {
    return createPrivateKey(key);
  } catch (err) {
    throw new TlsFileError(`${block}.key_file ${file}: not a PEM private key (${(err as Error).message})`, { cause: err });
  }
}

/** node:https options of the client API. With clientCertAuth, clients need a certificate
 *  signed by ca_file (refused at the handshake otherwise). */
export function apiServerOptions(m: TlsMaterial, clientCertAuth: boolean): https.ServerOptions {
  return {
    cert: m.cert,
    key: m.key,
    ...(m.ca ? { ca: m.ca } : {}),
    minVersion: MIN_VERSION,
    requestCert: clientCertAuth,
    rejectUnauthorized: clientCertAuth,
  };
}

/** node:https options of the peer server. The client certificate is requested but judged
 *  by peerCertificateProblem() in the transport's authenticate hook, not by the handshake:
 *  that way a refused peer gets an HTTP 401 that is counted and logged with its address,
 *  and still never reaches the Raft core. */
export function peerServerOptions(m: TlsMaterial): https.ServerOptions {
  return { cert: m.cert, key: m.key, ca: m.ca, minVersion: MIN_VERSION, requestCert: true, rejectUnauthorized: false };
}

/** Why the peer on this socket is not a cluster member by certificate, or null. */
export function peerCertificateProblem(socket: unknown): 'tls_no_certificate' | 'tls_untrusted_certificate' | 'tls_not_tls' | null {
  const s = socket as Partial<TLSSocket>;
  if (typeof s.getPeerCertificate !== 'function') return 'tls_not_tls';
  const peer = s.getPeerCertificate();
  const hasCert = peer !== null && typeof peer === 'object' && Object.keys(peer).length > 0;
  // `authorized` alone is not enough: on a RESUMED session (a TLS session ticket from an
  // earlier connection) Node reports authorized=true even when that earlier handshake
  // carried no certificate at all. A member always has its certificate in the session.
  if (s.authorized === true && hasCert) return null;
  return hasCert ? 'tls_untrusted_certificate' : 'tls_no_certificate';
}

/** connect options for undici (peer links, snapshot sends, forwarding): our certificate
 *  for mutual TLS, and only our CA as trust anchor. */
export function clientTlsOptions(m: TlsMaterial): { cert: Buffer; key: Buffer; ca?: Buffer; minVersion: typeof MIN_VERSION } {
  return { cert: m.cert, key: m.key, ...(m.ca ? { ca: m.ca } : {}), minVersion: MIN_VERSION };
}

/**
 * An undici connector whose TLS options can be replaced at run time (SIGHUP): new
 * connections use the newest certificate; open ones keep theirs until they close.
 * undici takes a connector function in place of connect options.
 */
export class ReloadableConnector {
  private current: buildConnector.connector;
  readonly connect: buildConnector.connector;

  constructor(m: TlsMaterial, private readonly timeoutMs = 5000) {
    this.current = this.build(m);
    this.connect = (opts, cb) => this.current(opts, cb);
  }

  set(m: TlsMaterial): void {
    this.current = this.build(m);
  }

  private build(m: TlsMaterial): buildConnector.connector {
    return buildConnector(Object.assign(clientTlsOptions(m), { timeout: this.timeoutMs }));
  }
}
