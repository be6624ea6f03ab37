// A small HTTP client over fetch: real requests on a real socket, JSON envelopes decoded.
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface Client {
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  get<T = any>(path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse<T>>;
  put<T = any>(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse<T>>;
  patch<T = any>(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse<T>>;
  delete<T = any>(path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
}

/**
 * The test app trusts a proxy on loopback (TRUST_PROXY) and this client stands for many devices
 * behind it: every request carries its own X-Forwarded-For address unless the test sets one, so the
 * per-address sign-in limits stay on and only tests that mean to share an address do. The limits
 * count an IPv6 client by its /64, so each address is in a /64 of its own.
 */
let addressCounter = 0;
export function nextClientAddress(): string {
  addressCounter += 1;
  return `2001:db8:${(addressCounter >>> 16).toString(16)}:${(addressCounter & 0xffff).toString(16)}::1`;
}

export function createClient(baseUrl: string): Client {
  async function request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { 'x-forwarded-for': nextClientAddress(), ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${baseUrl}/api/v1${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON (docs page, stream)
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  }
  return {
    request,
    get: (path, options) => request('GET', path, options),
    post: (path, body, options) => request('POST', path, { ...options, body }),
    put: (path, body, options) => request('PUT', path, { ...options, body }),
    patch: (path, body, options) => request('PATCH', path, { ...options, body }),
    delete: (path, options) => request('DELETE', path, options),
  };
}
