package webhook

import (
	"encoding/json"
	"time"
)

// CloudEvent is a CloudEvents 1.0 event in structured JSON mode
// (Content-Type application/cloudevents+json).
type CloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	Type            string          `json:"type"`
	Source          string          `json:"source"`
	Subject         string          `json:"subject,omitempty"`
	ID              string          `json:"id"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data,omitempty"`
}

// ContentType is a structured CloudEvent's media type.
const ContentType = "application/cloudevents+json"

// Source is the CloudEvent source of a tenant's events: its resource
// name, under the installation's source prefix (a URI reference, such as
// "https://trainyard.example.com", or empty).
func Source(prefix, tenant string) string {
	return prefix + "/tenants/" + tenant
}

// NewCloudEvent builds the event of a message.
func NewCloudEvent(topic, source, subject, id string, t time.Time, data json.RawMessage) CloudEvent {
	return CloudEvent{
		SpecVersion: "1.0", Type: CloudEventType(topic), Source: source, Subject: subject,
		ID: id, Time: t.UTC(), DataContentType: "application/json", Data: data,
	}
}
