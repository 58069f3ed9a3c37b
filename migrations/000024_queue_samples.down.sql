DROP TABLE capacity_samples;
DROP TABLE queue_samples;
