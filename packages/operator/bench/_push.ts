// A GitHub push delivery, signed as GitHub signs it, sent to the operator's webhook receiver: how users tell
// Syncline about a commit. The receiver wakes every ConfigSync of that repository.
import { createHmac, randomUUID } from 'node:crypto';

/** Posts a signed `push` event for `sha` on the repository at `repoUrl` to the receiver at `address`. */
export function deliverPush(input: { address: string; secret: string; repoUrl: string; sha: string }): Promise<void> {
  const { address, secret, repoUrl, sha } = input;
  const body = JSON.stringify({
    ref: 'refs/heads/main',
    before: '0'.repeat(40),
    after: sha,
    repository: { full_name: 'bench/repo', clone_url: repoUrl, html_url: repoUrl.replace(/\.git$/, ''), default_branch: 'main' },
    pusher: { name: 'bench' },
    head_commit: { id: sha, message: 'bench change' },
  });
  return fetch(`http://${address}/hooks/github`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-GitHub-Event': 'push',
      'X-GitHub-Delivery': randomUUID(),
      'X-Hub-Signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    },
    body,
  }).then(async (response) => {
    await response.arrayBuffer();
    if (response.status !== 202) throw new Error(`the receiver answered ${response.status}`);
  });
}
