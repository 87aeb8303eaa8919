/**
 * The route table: every endpoint, the Lambda behind it and what that Lambda may touch. The CDK stack
 * and the local gateway are both built from it, so the deployed API and `npm start` expose the same
 * routes with the same handlers.
 */

/** Least-privilege access a function gets to the table: read only or read/write. */
export type TableAccess = 'RO' | 'RW';

/** What a function needs besides the table; the stack grants exactly this. */
export interface FunctionNeeds {
  table: TableAccess;
  /** Calls the upstream provider (needs the provider URL and key secret). */
  provider: boolean;
  /** `write` copies results into the media bucket and signs URLs; `none` never touches it. */
  media: 'write' | 'none';
}

export interface LambdaDefinition {
  /** kebab-case name; also the folder under functions/. */
  name: string;
  /** Handler file relative to the repository root; it exports `handler`. */
  entry: string;
  needs: FunctionNeeds;
}

export interface RouteDefinition extends LambdaDefinition {
  method: 'GET' | 'POST';
  /** API Gateway path, `{param}` for path parameters. */
  path: string;
}

const lifecycleNeeds: FunctionNeeds = { table: 'RW', provider: true, media: 'write' };

export const ROUTES: readonly RouteDefinition[] = [
  {
    name: 'submit-image',
    method: 'POST',
    path: '/api/ai/image/generate',
    entry: 'functions/submit-image/handler.ts',
    needs: lifecycleNeeds,
  },
  {
    name: 'submit-video',
    method: 'POST',
    path: '/api/ai/video/generate',
    entry: 'functions/submit-video/handler.ts',
    needs: lifecycleNeeds,
  },
  {
    // GET refreshes a pending task (claim, provider query, complete or refund), hence RW.
    name: 'get-task',
    method: 'GET',
    path: '/api/ai/tasks/{id}',
    entry: 'functions/get-task/handler.ts',
    needs: lifecycleNeeds,
  },
];

/** The API Gateway REQUEST authorizer in front of every route. */
export const AUTHORIZER: LambdaDefinition = {
  name: 'authorizer',
  entry: 'functions/authorizer/handler.ts',
  needs: { table: 'RO', provider: false, media: 'none' },
};

/** Runs on a schedule and drives every pending task to a terminal state. */
export const SWEEPER: LambdaDefinition = {
  name: 'sweeper',
  entry: 'functions/sweeper/handler.ts',
  needs: lifecycleNeeds,
};

/** Identity sources of the authorizer; its result cache is keyed on both. */
export const AUTHORIZER_IDENTITY_SOURCES = [
  'method.request.header.Authorization',
  'context.identity.sourceIp',
] as const;
