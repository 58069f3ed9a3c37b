DROP TABLE event_horizon;
