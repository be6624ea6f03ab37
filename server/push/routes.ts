// Every push endpoint (contract 12), in one list for the app (server/features.ts): the devices a
// push goes to, and the settings that decide which notifications are pushed.
import { pushDeviceEndpoints } from './devices.ts';
import { notificationSettingsEndpoints } from './notification-settings.ts';

export const endpoints = [...pushDeviceEndpoints, ...notificationSettingsEndpoints];
