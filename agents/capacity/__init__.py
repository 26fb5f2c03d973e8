"""The capacity and churn studies: gateway sessions opened, held idle and closed, per gateway."""
