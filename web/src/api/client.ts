// A small client of the REST API: JSON calls, newline-delimited JSON
// streams (watches) and text streams (logs), all with the session's bearer
// token in the Authorization header.
import type { FieldViolation } from "./types";

export class ApiError extends Error {
  readonly status: number;
  readonly violations: FieldViolation[];
  // code is the gRPC status code the API answered with (0 when unknown):
  // it tells apart errors that share an HTTP status, such as
  // INVALID_ARGUMENT (3) and OUT_OF_RANGE (11), both 400.
  readonly code: number;
  constructor(status: number, message: string, violations: FieldViolation[] = [], code = 0) {
    super(message);
    this.status = status;
    this.violations = violations;
    this.code = code;
  }
}

// OUT_OF_RANGE: a watch resumed from a position older than the events the
// server keeps.
export const codeOutOfRange = 11;

interface Status {
  code?: number;
  message?: string;
  details?: { "@type"?: string; fieldViolations?: FieldViolation[] }[];
}

function statusError(httpStatus: number, body: Status | undefined): ApiError {
  const violations = (body?.details ?? []).flatMap((d) => d.fieldViolations ?? []);
  return new ApiError(httpStatus, body?.message || `HTTP ${httpStatus}`, violations, body?.code ?? 0);
}

export type TokenSource = () => string | undefined;

export class Api {
  private readonly token: TokenSource;
  private readonly onUnauthorized: () => void;

  // onUnauthorized is called on any 401: the token expired or was revoked.
  constructor(token: TokenSource, onUnauthorized: () => void) {
    this.token = token;
    this.onUnauthorized = onUnauthorized;
  }

  private async send(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { Accept: "application/json" };
    const t = this.token();
    if (t) headers.Authorization = `Bearer ${t}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const r = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: "no-store",
    });
    if (r.status === 401) this.onUnauthorized();
    if (!r.ok) {
      let parsed: Status | undefined;
      try {
        // Streams answer an error as {"error": status}, the rest as the status.
        const body = (await r.json()) as Status & { error?: Status };
        parsed = body.error ?? body;
      } catch {
        parsed = undefined;
      }
      throw statusError(r.status, parsed);
    }
    return r;
  }

  async call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const r = await this.send(method, path, body, signal);
    return (await r.json()) as T;
  }

  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.call<T>("GET", path, undefined, signal);
  }

  // lines reads a newline-delimited JSON stream ({"result": …} or
  // {"error": …} per line, as the gateway writes server streams) until it
  // ends, the signal aborts, or an error line arrives.
  async lines<T>(path: string, onResult: (r: T) => void, signal: AbortSignal): Promise<void> {
    const r = await this.send("GET", path, undefined, signal);
    let rest = "";
    await readText(r, signal, (chunk) => {
      rest += chunk;
      let nl: number;
      while ((nl = rest.indexOf("\n")) >= 0) {
        const line = rest.slice(0, nl).trim();
        rest = rest.slice(nl + 1);
        if (!line) continue;
        const msg = JSON.parse(line) as { result?: T; error?: Status };
        if (msg.error) {
          if (msg.error.code === 16) this.onUnauthorized();
          throw statusError(httpOf(msg.error.code), msg.error);
        }
        if (msg.result) onResult(msg.result);
      }
    });
  }

  // text reads a text stream (logs) chunk by chunk.
  async text(path: string, onChunk: (s: string) => void, signal: AbortSignal): Promise<void> {
    const r = await this.send("GET", path, undefined, signal);
    await readText(r, signal, onChunk);
  }
}

async function readText(r: Response, signal: AbortSignal, onChunk: (s: string) => void): Promise<void> {
  if (!r.body) return;
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  const stop = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", stop);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      if (value) onChunk(value);
    }
  } finally {
    signal.removeEventListener("abort", stop);
  }
}

// httpOf maps the gRPC codes a stream may end with to HTTP statuses.
function httpOf(code: number | undefined): number {
  switch (code) {
    case 3: return 400;
    case 5: return 404;
    case 7: return 403;
    case 8: return 429;
    case 14: return 503;
    case 16: return 401;
    default: return 500;
  }
}

// Paths of the API, from resource names (tenants/t/jobs/j).
export const paths = {
  jobs: (tenant: string) => `/v1/tenants/${enc(tenant)}/jobs`,
  job: (name: string) => `/v1/${name.split("/").map(enc).join("/")}`,
  tenant: (tenant: string) => `/v1/tenants/${enc(tenant)}`,
  cohorts: "/v1/cohorts",
};

function enc(s: string): string {
  return encodeURIComponent(s);
}
