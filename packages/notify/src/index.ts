// Public entry point of @syncline/notify: notifications, with their own kinds (NotificationProvider,
// NotificationAlert). They take an event feed (the recorder every Event goes through, and the ConfigSync changes of
// the operator's cache) and send chat messages, webhooks and commit statuses through an injected HTTP transport.
// The `syncline` binary plugs startNotifications into the operator's runOperator.
export { startNotifications, NOTIFICATIONS_METRIC, NOTIFICATIONS_CONTROLLER, DELIVERY_FAILED } from './controller.ts';
export type { Notifications, NotificationsOptions } from './controller.ts';
