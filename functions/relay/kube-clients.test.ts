import { describe, expect, it } from 'vitest';
import { inClusterConfig, kubeconfigPath } from './kube-clients.ts';

/** Which clients a relay process gets, and a Pod's own credentials as client-go's InClusterConfig reads them. */

const ENV = { KUBERNETES_SERVICE_HOST: '10.100.0.1', KUBERNETES_SERVICE_PORT: '443' };

function files(contents: Record<string, string>) {
  const reads: string[] = [];
  const read = (path: string) => {
    reads.push(path);
    const text = contents[path];
    if (text === undefined) throw new Error(`ENOENT: ${path}`);
    return text;
  };
  return { read, reads, contents };
}

describe('inClusterConfig', () => {
  it('talks to the service address with the service account CA and token', () => {
    const fs = files({ '/sa/token': 'token-1\n', '/sa/ca.crt': 'PEM' });
    const config = inClusterConfig(ENV, fs.read, () => 0, '/sa');

    expect(config.server).toBe('https://10.100.0.1:443');
    expect(Buffer.from(config.caData, 'base64').toString()).toBe('PEM');
    expect(config.readToken?.()).toBe('token-1');
    expect(inClusterConfig({ ...ENV, KUBERNETES_SERVICE_HOST: 'fd00::1' }, fs.read, () => 0, '/sa').server).toBe(
      'https://[fd00::1]:443',
    );
  });

  it('reads the rotated token again after a minute, and keeps the last one when a read fails', () => {
    const fs = files({ '/sa/token': 'token-1', '/sa/ca.crt': 'PEM' });
    let now = 0;
    const config = inClusterConfig(ENV, fs.read, () => now, '/sa');
    fs.contents['/sa/token'] = 'token-2';

    now = 59_000;
    expect(config.readToken?.()).toBe('token-1');
    now = 60_000;
    expect(config.readToken?.()).toBe('token-2');
    delete fs.contents['/sa/token'];
    now = 120_000;
    expect(config.readToken?.()).toBe('token-2');
    expect(fs.reads.filter((p) => p === '/sa/token')).toHaveLength(3);
  });

  it('refuses to start without the service address', () => {
    const fs = files({ '/sa/token': 't', '/sa/ca.crt': 'PEM' });
    expect(() => inClusterConfig({}, fs.read, () => 0, '/sa')).toThrow(/KUBERNETES_SERVICE_HOST/);
  });
});

describe('kubeconfigPath', () => {
  const inPod = (path: string) => path === '/sa/token';

  it("follows client-node's default order, with RELAY_KUBECONFIG first", () => {
    const home = (path: string) => path === '/home/me/.kube/config' || inPod(path);
    expect(kubeconfigPath({ RELAY_KUBECONFIG: '/k' }, { KUBECONFIG: '/x' }, inPod, '/sa')).toEqual({
      mode: 'kubeconfig',
      path: '/k',
    });
    expect(kubeconfigPath({}, { KUBECONFIG: '/x' }, inPod, '/sa')).toEqual({ mode: 'kubeconfig' });
    expect(kubeconfigPath({}, { HOME: '/home/me' }, home, '/sa')).toEqual({ mode: 'kubeconfig' });
    expect(kubeconfigPath({}, { HOME: '/home/nonroot' }, inPod, '/sa')).toEqual({ mode: 'in-cluster' });
    expect(kubeconfigPath({}, {}, () => false, '/sa')).toEqual({ mode: 'kubeconfig' });
  });
});
