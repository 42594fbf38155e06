/** The JupyterLab extension's layout worker (its own webpack chunk): see `layoutserver.ts`. */

import { WorkerScope, serveLayouts } from './layoutserver';

serveLayouts(self as unknown as WorkerScope);
