DROP TABLE trial_metrics;
DROP TABLE experiment_trials;
DROP TABLE experiments;
