/**
 * The routes of the account's webhook endpoints (functions/lifecycle/webhook-endpoints.ts), in the order
 * the API documents them; lib/route-table.ts lists them after the account's own routes. Their items, and
 * the deliveries and counters they open, are the account's own (USER#<id>).
 */
import { ownReadNeeds } from './function-needs';
import type { RouteDefinition } from './lambda-definitions';

export const WEBHOOK_ENDPOINT_ROUTES: readonly RouteDefinition[] = [
  {
    name: 'webhook-endpoints-create',
    trigger: 'route',
    method: 'POST',
    path: '/api/webhooks',
    entry: 'functions/webhook-endpoints-create/handler.ts',
    // Seals the new endpoint's signing secret: the sealing key, as the worker's.
    needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'none', webhookSecrets: true },
  },
  {
    name: 'webhook-endpoints-list',
    trigger: 'route',
    method: 'GET',
    path: '/api/webhooks',
    entry: 'functions/webhook-endpoints-list/handler.ts',
    needs: ownReadNeeds,
  },
  {
    name: 'webhook-endpoints-get',
    trigger: 'route',
    method: 'GET',
    path: '/api/webhooks/{id}',
    entry: 'functions/webhook-endpoints-get/handler.ts',
    needs: ownReadNeeds,
  },
  {
    name: 'webhook-endpoints-update',
    trigger: 'route',
    method: 'PATCH',
    path: '/api/webhooks/{id}',
    entry: 'functions/webhook-endpoints-update/handler.ts',
    needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'none' },
  },
  {
    name: 'webhook-endpoints-delete',
    trigger: 'route',
    method: 'DELETE',
    path: '/api/webhooks/{id}',
    entry: 'functions/webhook-endpoints-delete/handler.ts',
    // Deletes the endpoint's item (USER#<id>/WEBHOOKEP#...): DeleteItem there only.
    needs: { table: { access: 'RW', keys: ['USER#*'], deletes: ['USER#*'] }, provider: false, media: 'none' },
  },
  {
    name: 'webhook-endpoints-rotate',
    trigger: 'route',
    method: 'POST',
    path: '/api/webhooks/{id}/rotate-secret',
    entry: 'functions/webhook-endpoints-rotate/handler.ts',
    needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'none', webhookSecrets: true },
  },
  {
    // Opens a delivery (the worker sends it): no secret, no call out from here.
    name: 'webhook-endpoints-test',
    trigger: 'route',
    method: 'POST',
    path: '/api/webhooks/{id}/test',
    entry: 'functions/webhook-endpoints-test/handler.ts',
    needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'none' },
  },
  {
    name: 'webhook-endpoints-deliveries',
    trigger: 'route',
    method: 'GET',
    path: '/api/webhooks/{id}/deliveries',
    entry: 'functions/webhook-endpoints-deliveries/handler.ts',
    needs: ownReadNeeds,
  },
  {
    // Claims a new attempt (the worker sends it): no secret, no call out from here.
    name: 'webhook-endpoints-redeliver',
    trigger: 'route',
    method: 'POST',
    path: '/api/webhooks/{id}/deliveries/{deliveryId}/redeliver',
    entry: 'functions/webhook-endpoints-redeliver/handler.ts',
    needs: { table: { access: 'RW', keys: ['USER#*'] }, provider: false, media: 'none' },
  },
];
