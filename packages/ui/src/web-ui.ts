// The web UI as the operator takes it (its WebUi): the composition root creates one and passes it to runOperator,
// which records its Events through record() and calls start() once its manager and caches run.
import type { WebUi } from '@syncline/operator/client';
import { createActivityLog } from './activity.ts';
import { startUiServer, uiSignIn } from './server.ts';

export function createWebUi(): WebUi {
  // The web UI's recent activity: what the operator's recorder records, remembered in memory as it goes.
  const activity = createActivityLog();
  return {
    record: (recorder) => activity.wrap(recorder),
    start: ({ flags, podNamespace, mirrors, ...options }) =>
      startUiServer({ ...options, activity, ...uiSignIn(flags, podNamespace), ...(mirrors === undefined ? {} : { mirrors }) }),
  };
}
