DROP TABLE usage_daily;
